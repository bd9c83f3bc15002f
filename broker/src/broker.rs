//! The broker: configuration, shared state, and the dispatch of every request to its handler.

use crate::handlers;
use crate::mirror_rpc::{MirrorApiKey, MirrorRequest, MirrorResponse};
use crate::server::{Handler, MirrorRequestContext, Reply, RequestContext};
use crate::topics::TopicRegistry;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, RequestHeader, RequestKind, ResponseKind,
    SaslAuthenticateResponse, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_engine::clock::Clock;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig, PartitionHandle};
use mirrorlog_index::{ErrorChain, TopicPartition};
use mirrorlog_segment::io::Storage;
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Kafka's default `fetch.max.bytes` (55 MiB).
pub const DEFAULT_FETCH_MAX_BYTES: i32 = 57_671_680;

/// Broker settings, named after Kafka's `server.properties` keys where one exists.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// `node.id`. Default 1; range 0 ..= i32::MAX.
    pub node_id: i32,
    /// The cluster id reported in Metadata and DescribeCluster (Kafka: from `meta.properties`).
    /// Default: generated once and stored in the first data dir's `meta.properties`.
    pub cluster_id: Option<String>,
    /// Host advertised to clients (`advertised.listeners`). Default the listen address's host.
    pub advertised_host: String,
    /// Port advertised to clients. Default the listen port.
    pub advertised_port: i32,
    /// `auto.create.topics.enable`. Default true.
    pub auto_create_topics: bool,
    /// `num.partitions` for auto-created topics. Default 1; range 1 ..= 100000.
    pub num_partitions: i32,
    /// `fetch.max.bytes`: the most record bytes one Fetch answer carries, whatever the request
    /// asks (its first batch may still exceed it, as Kafka's does), so a request cannot make the
    /// broker copy gigabytes into memory. Default 57671680 (55 MiB, Kafka's); range
    /// 1024 ..= 2147483647.
    pub fetch_max_bytes: i32,
    /// `max.incremental.fetch.session.cache.slots`: the most incremental fetch sessions
    /// (KIP-227) held at once; a full fetch finding them all taken and none evictable is answered
    /// without a session. 0 turns sessions off. Default 1000 (Kafka's); range 0 ..= 2147483647.
    pub max_incremental_fetch_session_cache_slots: i32,
    /// The log manager's settings (`log.dirs` and the topic defaults).
    pub logs: LogManagerConfig,
    /// The group coordinator's settings (`group.*`, `offsets.*`; each field gives its Kafka
    /// key, default and range).
    pub group: crate::group::GroupConfig,
    /// The transaction coordinator's settings (`transaction.*`, `transactional.id.*`; each
    /// field gives its Kafka key, default and range).
    pub txn: crate::txn::TxnConfig,
    /// The `server.properties` pairs (and flags, under their keys) this broker was started
    /// with, as given; `mirrorlog serve` fills it. DescribeConfigs shows a key named here as
    /// `STATIC_BROKER_CONFIG` even at its default value, as Kafka shows its file's keys, and
    /// lists the alternate spellings set here (`log.retention.hours`, …) with the value given.
    /// Default empty: a setting changed in code shows as `STATIC_BROKER_CONFIG` when it
    /// differs from its default.
    pub static_config: std::collections::BTreeMap<String, String>,
}

impl BrokerConfig {
    /// Defaults for one data directory, advertised as `host:port`.
    pub fn new(data_dir: impl Into<std::path::PathBuf>, host: &str, port: i32) -> BrokerConfig {
        BrokerConfig {
            node_id: 1,
            cluster_id: None,
            advertised_host: host.to_string(),
            advertised_port: port,
            auto_create_topics: true,
            num_partitions: 1,
            fetch_max_bytes: DEFAULT_FETCH_MAX_BYTES,
            max_incremental_fetch_session_cache_slots: handlers::fetch::DEFAULT_SESSION_SLOTS,
            logs: LogManagerConfig::new(data_dir),
            group: crate::group::GroupConfig::default(),
            txn: crate::txn::TxnConfig::default(),
            static_config: std::collections::BTreeMap::new(),
        }
    }

    /// Rejects out-of-range settings with a message naming the setting.
    ///
    /// # Errors
    /// The first invalid setting.
    pub fn validate(&self) -> Result<(), String> {
        if self.node_id < 0 {
            return Err(format!("node.id {} must be >= 0", self.node_id));
        }
        if !(1..=100_000).contains(&self.num_partitions) {
            return Err(format!(
                "num.partitions {} is outside 1..=100000",
                self.num_partitions
            ));
        }
        if self.fetch_max_bytes < 1024 {
            return Err(format!(
                "fetch.max.bytes {} is outside 1024..=2147483647",
                self.fetch_max_bytes
            ));
        }
        if self.max_incremental_fetch_session_cache_slots < 0 {
            return Err(format!(
                "max.incremental.fetch.session.cache.slots {} is outside 0..=2147483647",
                self.max_incremental_fetch_session_cache_slots
            ));
        }
        if !(1..=65535).contains(&self.advertised_port) {
            return Err(format!(
                "advertised port {} is outside 1..=65535",
                self.advertised_port
            ));
        }
        self.group.validate()?;
        self.txn.validate()?;
        self.logs.validate()
    }
}

/// A part of the broker that answers some APIs on its own (the group and transaction
/// coordinators).
pub trait Coordinator: Send + Sync {
    /// The APIs it answers.
    fn apis(&self) -> Vec<ApiKey>;
    /// Versions implemented for `api`.
    fn supported_versions(&self, api: ApiKey) -> Option<(i16, i16)>;
    /// Answers one request of one of its APIs (may block).
    fn handle(&self, ctx: &RequestContext, request: RequestKind) -> ResponseKind;
    /// Which long-polling fetches a request of `api` may have given something to read, so the
    /// broker wakes them after it. Default: every one (a coordinator that does not say).
    fn wakes(&self, _api: ApiKey) -> Wakes {
        Wakes::All
    }
    /// Periodic upkeep (session and transaction timeouts). Returns whether it may have written
    /// to a log that fetches wait on (transaction markers), so the broker wakes them.
    fn tick(&self, now_ms: i64) -> bool;
    /// The broker is stopping: answer blocked requests (JoinGroup) and refuse new ones, so that
    /// in-flight requests finish.
    fn shutdown(&self) {}
    /// A topic was deleted: drop what is kept for its partitions (a group's committed offsets,
    /// as Kafka's `onPartitionsDeleted`). Called under the topic registry's lock, before the
    /// name is free for a new topic (see `TopicRegistry::delete_then`): it must not call into
    /// the registry.
    fn topic_deleted(&self, _topic: &str) {}
    /// FindCoordinator of `key` for coordinator type `key_type`: the error to answer when this
    /// coordinator owns that type but cannot coordinate the key (its partition is not loaded),
    /// `None` otherwise (this broker is the coordinator).
    fn find_error(&self, _key_type: i8, _key: &str) -> Option<i16> {
        None
    }
}

/// Which long-polling fetches a coordinator request may concern ([`Coordinator::wakes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wakes {
    /// None: the request writes no log (Heartbeat, OffsetFetch, ListGroups, DescribeGroups),
    /// or the coordinator wakes the partitions it writes itself as it writes them (every write
    /// of the group coordinator to `__consumer_offsets`, and of the transaction coordinator to
    /// `__transaction_state` and of its markers).
    Nobody,
    /// Every fetch: the coordinator does not say what it wrote (the default).
    All,
}

/// Wakes long-polling fetches when data arrives, and for good when the broker stops.
///
/// Keyed by partition, as Kafka's `DelayedFetch` purgatory: a waiting fetch registers an
/// [`Interest`] in exactly the partitions it reads, and an append to a partition signals only
/// the fetches registered on it ([`notify_partition`](Self::notify_partition)): a produce, a
/// mirror's append or truncation, a transaction marker. Broker-wide events (shutdown, a
/// coordinator that does not say what it wrote) still wake every waiter
/// ([`notify`](Self::notify), [`close`](Self::close)). A fetch registers before it reads and re-arms before each re-read,
/// so an append between its read and its sleep still wakes it.
#[derive(Debug, Default)]
pub struct AppendNotifier {
    /// Topic → partition → the fetches waiting on it.
    waiters: RwLock<HashMap<String, PartitionWaiters>>,
    /// Registered interests: an append with none pays one atomic load.
    registered: AtomicUsize,
    /// Set when shutdown starts: long polls answer with what they have instead of waiting.
    closed: AtomicBool,
    /// Test hook: how many times a registered fetch was signalled (each one re-reads).
    wakeups: AtomicU64,
}

/// A topic's partitions → the fetches waiting on each.
type PartitionWaiters = HashMap<i32, Vec<Arc<Waiter>>>;

/// One waiting fetch.
#[derive(Debug, Default)]
struct Waiter {
    fired: Mutex<bool>,
    cv: Condvar,
}

/// A fetch's registration on its partitions; dropping it deregisters. See [`AppendNotifier`].
#[derive(Debug)]
pub struct Interest<'a> {
    notifier: &'a AppendNotifier,
    waiter: Arc<Waiter>,
    keys: Vec<(String, i32)>,
}

impl AppendNotifier {
    /// The broker is stopping: wakes every waiter, and no wait blocks from now on (a graceful
    /// shutdown waits for in-flight requests, and a fetch may ask to wait ~24 days).
    pub fn close(&self) {
        // Set before signalling under the lock: a fetch registering later sees it when it
        // checks `is_closed` after its read.
        self.closed.store(true, Ordering::SeqCst);
        self.notify();
    }
    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
    /// Something that may concern any partition happened (transaction markers written by a
    /// coordinator): wakes every waiting fetch.
    pub fn notify(&self) {
        if self.registered.load(Ordering::SeqCst) == 0 && !self.is_closed() {
            return;
        }
        let map = self.waiters.read();
        for w in map.values().flat_map(HashMap::values).flatten() {
            self.fire(w);
        }
    }
    /// Data, the high watermark or the log start of `topic`-`partition` moved: wakes the
    /// fetches waiting on it. Costs an atomic load when no fetch waits, a hash lookup when
    /// none waits on this partition.
    pub fn notify_partition(&self, topic: &str, partition: i32) {
        if self.registered.load(Ordering::SeqCst) == 0 {
            return;
        }
        let map = self.waiters.read();
        if let Some(ws) = map.get(topic).and_then(|t| t.get(&partition)) {
            for w in ws {
                self.fire(w);
            }
        }
    }
    /// Something happened to every partition of `topic` (its deletion, a mirror's appends).
    pub fn notify_topic(&self, topic: &str) {
        if self.registered.load(Ordering::SeqCst) == 0 {
            return;
        }
        let map = self.waiters.read();
        if let Some(t) = map.get(topic) {
            for w in t.values().flatten() {
                self.fire(w);
            }
        }
    }
    /// Registers a fetch on `keys` (topic name, partition); it is signalled by appends to
    /// them until the returned [`Interest`] is dropped. Register before reading.
    pub fn register(&self, keys: Vec<(String, i32)>) -> Interest<'_> {
        let waiter = Arc::new(Waiter::default());
        {
            let mut map = self.waiters.write();
            for (topic, partition) in &keys {
                let parts = match map.get_mut(topic.as_str()) {
                    Some(p) => p,
                    None => map.entry(topic.clone()).or_default(),
                };
                parts.entry(*partition).or_default().push(waiter.clone());
            }
            self.registered.fetch_add(1, Ordering::SeqCst);
        }
        Interest {
            notifier: self,
            waiter,
            keys,
        }
    }
    /// Test hook: how many times a registered fetch was signalled so far.
    pub fn wakeups(&self) -> u64 {
        self.wakeups.load(Ordering::SeqCst)
    }
    /// Test hook: how many fetches are registered now.
    pub fn waiting(&self) -> usize {
        self.registered.load(Ordering::SeqCst)
    }

    fn fire(&self, w: &Waiter) {
        let mut fired = w.fired.lock();
        if !*fired {
            *fired = true;
            self.wakeups.fetch_add(1, Ordering::SeqCst);
            w.cv.notify_one();
        }
    }
}

impl Interest<'_> {
    /// Forgets earlier signals: call before each read, so that only appends after it (or
    /// during it) end the next [`wait`](Self::wait).
    pub fn arm(&self) {
        *self.waiter.fired.lock() = false;
    }
    /// Waits until one of the partitions is signalled since [`arm`](Self::arm), the notifier
    /// closes, or `deadline` passes. Returns whether it was signalled.
    pub fn wait(&self, deadline: Instant) -> bool {
        let mut fired = self.waiter.fired.lock();
        while !*fired {
            if self.notifier.is_closed() {
                return false;
            }
            if self.waiter.cv.wait_until(&mut fired, deadline).timed_out() {
                return *fired;
            }
        }
        true
    }
}

impl Drop for Interest<'_> {
    fn drop(&mut self) {
        let mut map = self.notifier.waiters.write();
        for (topic, partition) in &self.keys {
            let Some(parts) = map.get_mut(topic.as_str()) else {
                continue;
            };
            if let Some(ws) = parts.get_mut(partition) {
                ws.retain(|w| !Arc::ptr_eq(w, &self.waiter));
                if ws.is_empty() {
                    parts.remove(partition);
                }
            }
            if parts.is_empty() {
                map.remove(topic.as_str());
            }
        }
        self.notifier.registered.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The broker. See the module docs.
pub struct Broker {
    /// Settings.
    pub config: BrokerConfig,
    /// The cluster id.
    pub cluster_id: String,
    /// Every partition.
    pub logs: Arc<LogManager>,
    /// Topics.
    pub topics: TopicRegistry,
    /// Long-poll wake-ups.
    pub appends: Arc<AppendNotifier>,
    /// Incremental fetch sessions.
    pub fetch_sessions: handlers::fetch::FetchSessionCache,
    /// Cluster mirrors hosted here (KIP-1279 destination side).
    pub mirrors: crate::mirrors::Mirrors,
    /// Threads that help wait for multi-partition `acks = -1` syncs.
    pub durable_waiters: Arc<handlers::produce::DurableWaiters>,
    coordinators: RwLock<Vec<Arc<dyn Coordinator>>>,
    /// Verifies transactional Produce batches (KIP-890 part 1); none until a transaction
    /// coordinator is installed.
    txn_verifier: std::sync::OnceLock<Arc<dyn crate::txn::TxnVerifier>>,
    clock: Arc<dyn Clock>,
    /// This broker's own `Arc`, for handlers that hand it on (mirror creation); set by
    /// [`register_arc`](Broker::register_arc).
    this: std::sync::OnceLock<std::sync::Weak<Broker>>,
    /// The listener serving this broker, for DescribeConfigs; set by
    /// [`record_listener`](Broker::record_listener).
    listener: std::sync::OnceLock<crate::server::ServerConfig>,
    /// The process's log levels as Kafka's BROKER_LOGGER resource; set by
    /// [`install_loggers`](Broker::install_loggers).
    loggers: std::sync::OnceLock<Arc<crate::loggers::Loggers>>,
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("node_id", &self.config.node_id)
            .field("cluster_id", &self.cluster_id)
            .finish()
    }
}

impl Broker {
    /// Opens the data directories (recovering after a crash) and rebuilds the topic registry.
    /// Coordinators are added with [`add_coordinator`](Self::add_coordinator).
    ///
    /// # Errors
    /// Invalid configuration or storage failure.
    pub fn open(
        config: BrokerConfig,
        storage: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
    ) -> anyhow::Result<Broker> {
        config.validate().map_err(anyhow::Error::msg)?;
        // Before the logs are touched: a directory of another node or cluster is left as it is.
        let cluster_id = load_or_create_cluster_id(
            &config.logs.data_dirs[0],
            config.node_id,
            config.cluster_id.as_deref(),
        )?;
        let (logs, report) = LogManager::open(config.logs.clone(), storage, clock.clone())?;
        if report.unclean_logs > 0 {
            tracing::warn!(
                logs = report.unclean_logs,
                truncated = report.bytes_truncated,
                "recovered after an unclean shutdown"
            );
        }
        // Single node: this broker is the whole ISR of every partition, so, as Kafka's leader
        // does on election (`maybeIncrementLeaderHW`), the high watermark is the log end.
        for h in logs.partitions() {
            let mut log = h.write();
            let leo = log.log_end_offset();
            log.update_high_watermark(leo);
        }
        let topics = TopicRegistry::load(&logs);
        let fetch_sessions = handlers::fetch::FetchSessionCache::new(
            config.max_incremental_fetch_session_cache_slots as usize,
            handlers::fetch::SESSION_EVICTION_MS,
        );
        Ok(Broker {
            config,
            cluster_id,
            logs: Arc::new(logs),
            topics,
            appends: Arc::default(),
            fetch_sessions,
            mirrors: crate::mirrors::Mirrors::default(),
            durable_waiters: Arc::default(),
            coordinators: RwLock::new(vec![]),
            txn_verifier: std::sync::OnceLock::new(),
            clock,
            this: std::sync::OnceLock::new(),
            listener: std::sync::OnceLock::new(),
            loggers: std::sync::OnceLock::new(),
        })
    }

    /// Lets request handlers reach this broker's `Arc` (the mirror admin RPCs create mirrors,
    /// which keep a weak reference to the broker). Called once the broker is in its `Arc`
    /// ([`RunningBroker::start`](crate::running::RunningBroker::start) does); later calls do
    /// nothing.
    pub fn register_arc(self: &Arc<Self>) {
        let _ = self.this.set(Arc::downgrade(self));
    }

    /// Records the settings of the listener serving this broker (`listen` the address it
    /// bound), which DescribeConfigs lists (`listeners`, `socket.request.max.bytes`,
    /// `connections.max.idle.ms`, `max.connections`, …). [`RunningBroker::start`](crate::running::RunningBroker::start)
    /// calls it; later calls do nothing. A broker served by no listener lists none of them.
    pub fn record_listener(&self, config: crate::server::ServerConfig) {
        let _ = self.listener.set(config);
    }

    /// The listener settings [`record_listener`](Self::record_listener) recorded.
    pub fn listener(&self) -> Option<&crate::server::ServerConfig> {
        self.listener.get()
    }

    /// Lets DescribeConfigs and IncrementalAlterConfigs serve the BROKER_LOGGER resource
    /// through `loggers`, the process's log levels (`mirrorlog serve` installs its own; a
    /// broker without one refuses the resource type). Later calls do nothing.
    pub fn install_loggers(&self, loggers: Arc<crate::loggers::Loggers>) {
        let _ = self.loggers.set(loggers);
    }

    /// The log levels [`install_loggers`](Self::install_loggers) installed.
    pub fn loggers(&self) -> Option<&crate::loggers::Loggers> {
        self.loggers.get().map(|l| &**l)
    }

    /// This broker's `Arc`, once [`register_arc`](Self::register_arc) ran.
    pub fn arc(&self) -> Option<Arc<Broker>> {
        self.this.get().and_then(|w| w.upgrade())
    }

    /// Adds a coordinator; its APIs are dispatched to it from now on.
    pub fn add_coordinator(&self, c: Arc<dyn Coordinator>) {
        self.coordinators.write().push(c);
    }

    /// Sets the transaction coordinator that verifies transactional Produce batches (KIP-890
    /// part 1: a batch is appended only if its partition is in the producer's open
    /// transaction). Without one, batches are appended unverified, as by Kafka before 3.6.
    /// Later calls do nothing.
    pub fn set_txn_verifier(&self, verifier: Arc<dyn crate::txn::TxnVerifier>) {
        let _ = self.txn_verifier.set(verifier);
    }

    /// The transaction verifier, once set.
    pub fn txn_verifier(&self) -> Option<&Arc<dyn crate::txn::TxnVerifier>> {
        self.txn_verifier.get()
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// A partition by topic name and index.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<Arc<PartitionHandle>> {
        self.logs.get(&TopicPartition {
            topic: topic.to_string(),
            partition,
        })
    }

    /// Why a partition that [`partition`](Self::partition) did not find is not served:
    /// `KAFKA_STORAGE_ERROR` when it lives in a data directory that went offline before its
    /// log was loaded (as Kafka answers for a replica in an offline log dir), else
    /// `UNKNOWN_TOPIC_OR_PARTITION`.
    pub fn missing_partition_error(&self, topic: &str, partition: i32) -> ResponseError {
        let tp = TopicPartition {
            topic: topic.to_string(),
            partition,
        };
        match self.logs.lookup(&tp) {
            Err(_) => ResponseError::KafkaStorageError,
            Ok(_) => ResponseError::UnknownTopicOrPartition,
        }
    }

    /// The partition's current leader epoch
    /// ([`mirrorlog_engine::log::PartitionLog::leader_epoch`]: its epoch cache's latest, or a
    /// mirror's higher bump; 0 for a fresh partition).
    pub fn leader_epoch(&self, h: &PartitionHandle) -> i32 {
        h.read().leader_epoch().get().max(0)
    }

    /// Periodic upkeep: coordinators' timeouts, log maintenance (flush.ms, retention, producer
    /// expiry, checkpoints). Call every ~100 ms.
    pub fn tick(&self) {
        let now = self.clock.now_ms();
        let mut wrote = false;
        for c in self.coordinators.read().iter() {
            wrote |= c.tick(now);
        }
        if wrote {
            // Markers of timed-out or retried transactions move LSOs: wake READ_COMMITTED long
            // polls (as the coordinators' requests do).
            self.appends.notify();
        }
        // No fetch session expires here: as in Kafka, an idle one only becomes evictable, and
        // goes when a new session needs its slot (`FetchSessionCache`).
    }

    /// Log maintenance (retention, flush by time, checkpoints). Call every few seconds.
    pub fn maintain(&self) {
        if let Err(e) = self.logs.maintain() {
            tracing::error!("log maintenance: {}", ErrorChain(&e));
        }
    }

    /// Tells the coordinators that `topic` was deleted.
    pub fn topic_deleted(&self, topic: &str) {
        for c in self.coordinators.read().iter() {
            c.topic_deleted(topic);
        }
    }

    /// Tells the coordinators the broker is stopping (call when shutdown starts, before waiting
    /// for in-flight requests: a JoinGroup may otherwise wait for its rebalance timeout).
    pub fn shutdown_coordinators(&self) {
        for c in self.coordinators.read().iter() {
            c.shutdown();
        }
        // Long-polling fetches answer now rather than at their deadline.
        self.appends.close();
    }

    /// Clean shutdown: coordinators released, every log flushed and closed, checkpoints and the
    /// clean-shutdown marker written (the next start skips recovery).
    ///
    /// # Errors
    /// A partition still in use elsewhere, or a storage failure.
    pub fn shutdown(self) -> anyhow::Result<()> {
        self.shutdown_coordinators();
        self.mirrors.shutdown();
        let Broker {
            logs,
            coordinators,
            txn_verifier,
            ..
        } = self;
        drop((coordinators, txn_verifier));
        let logs = Arc::try_unwrap(logs)
            .map_err(|_| anyhow::anyhow!("the log manager is still in use at shutdown"))?;
        logs.shutdown()?;
        Ok(())
    }

    /// What FindCoordinator answers for `key` of `key_type` instead of this broker, if
    /// anything ([`Coordinator::find_error`]).
    pub fn find_coordinator_error(&self, key_type: i8, key: &str) -> Option<i16> {
        self.coordinators
            .read()
            .iter()
            .find_map(|c| c.find_error(key_type, key))
    }

    fn coordinator_for(&self, api: ApiKey) -> Option<Arc<dyn Coordinator>> {
        self.coordinators
            .read()
            .iter()
            .find(|c| c.apis().contains(&api))
            .cloned()
    }

    /// Every API this broker answers, with its version range.
    pub fn api_versions(&self) -> Vec<(ApiKey, i16, i16)> {
        let mut out = vec![];
        for key in all_api_keys() {
            if let Some((lo, hi)) = self.supported_versions(key) {
                out.push((key, lo, hi));
            }
        }
        out
    }

    /// The ApiVersions answer at `api_version`: the APIs with their version ranges and, from v3,
    /// the feature levels of [`crate::features`].
    fn api_versions_response(&self, api_version: i16) -> ApiVersionsResponse {
        let mut r = ApiVersionsResponse::default();
        r.error_code = 0;
        r.supported_features = crate::features::supported_feature_keys(api_version);
        r.finalized_features = crate::features::finalized_feature_keys(api_version);
        if api_version >= 3 {
            r.finalized_features_epoch = crate::features::FINALIZED_FEATURES_EPOCH;
        }
        r.api_keys = self
            .api_versions()
            .into_iter()
            .map(|(k, lo, hi)| (k as i16, lo, hi))
            .chain(
                MirrorApiKey::ALL
                    .iter()
                    .filter_map(|&k| self.mirror_versions(k).map(|(lo, hi)| (k as i16, lo, hi))),
            )
            .map(|(k, lo, hi)| {
                let mut v = ApiVersion::default();
                v.api_key = k;
                v.min_version = lo;
                v.max_version = hi;
                v
            })
            .collect();
        r
    }
}

/// Every API key the protocol crate knows.
pub fn all_api_keys() -> impl Iterator<Item = ApiKey> {
    (0..i16::MAX)
        .map_while(|k| if k > 200 { None } else { Some(k) })
        .filter_map(|k| ApiKey::try_from(k).ok())
}

/// The cluster id from `<dir>/meta.properties`, written there on first start.
///
/// Format (Kafka's KRaft `meta.properties`, version 1): UTF-8 `key=value` lines —
/// `#mirrorlog` (a comment), `cluster.id=<22-character base64url UUID>`, `node.id=<int>`,
/// `version=1` — written once to `meta.properties.tmp`, fsynced, renamed, the directory fsynced.
/// Only the first data directory gets one. The first start takes `configured` (the
/// `--cluster-id` flag, [`BrokerConfig::cluster_id`]) or generates an id; later starts read it
/// back. As Kafka's `MetaPropertiesEnsemble` checks, a stored `node.id` other than this
/// broker's, or a configured cluster id other than the stored one, refuses the start (the data
/// belongs to another broker or cluster; mirrors key their state by cluster id). Kafka also
/// writes a `directory.id` per directory; mirrorlog does not.
fn load_or_create_cluster_id(
    dir: &std::path::Path,
    node_id: i32,
    configured: Option<&str>,
) -> anyhow::Result<String> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("meta.properties");
    if let Ok(text) = std::fs::read_to_string(&path) {
        let value = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                .map(str::trim)
        };
        if let Some(stored) = value("node.id")
            && stored != node_id.to_string()
        {
            anyhow::bail!(
                "{}: stored node.id {stored} does not match this broker's node.id {node_id}",
                path.display()
            );
        }
        if let Some(id) = value("cluster.id") {
            if let Some(c) = configured
                && c != id
            {
                anyhow::bail!(
                    "{}: the data belongs to cluster {id}, not the configured cluster id {c}",
                    path.display()
                );
            }
            return Ok(id.to_string());
        }
    }
    // Kafka's cluster ids are a base64url (no padding) UUID.
    let id = match configured {
        Some(c) => c.to_string(),
        None => mirrorlog_index::TopicId(*uuid::Uuid::new_v4().as_bytes()).to_string(),
    };
    let text = format!("#mirrorlog\ncluster.id={id}\nnode.id={node_id}\nversion=1\n");
    let tmp = dir.join("meta.properties.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok(id)
}

impl Handler for Broker {
    fn handle_pipelined(
        &self,
        ctx: &RequestContext,
        header: &RequestHeader,
        request: RequestKind,
    ) -> Reply {
        match request {
            RequestKind::Produce(r) => handlers::produce::handle_pipelined(
                self,
                r,
                ctx.api_version,
                ctx.client_id.as_deref(),
            ),
            other => self.handle(ctx, header, other).into(),
        }
    }

    fn handle(
        &self,
        ctx: &RequestContext,
        _header: &RequestHeader,
        request: RequestKind,
    ) -> Option<ResponseKind> {
        let v = ctx.api_version;
        Some(match request {
            RequestKind::ApiVersions(_) => ResponseKind::ApiVersions(self.api_versions_response(v)),
            RequestKind::Metadata(r) => {
                ResponseKind::Metadata(handlers::admin::metadata(self, r, v))
            }
            RequestKind::Produce(r) => {
                return handlers::produce::handle_from(self, r, v, ctx.client_id.as_deref())
                    .map(ResponseKind::Produce);
            }
            RequestKind::Fetch(r) => ResponseKind::Fetch(handlers::fetch::handle(self, r, v)),
            RequestKind::ListOffsets(r) => {
                ResponseKind::ListOffsets(handlers::offsets::list_offsets(self, r, v))
            }
            RequestKind::OffsetForLeaderEpoch(r) => ResponseKind::OffsetForLeaderEpoch(
                handlers::offsets::offset_for_leader_epoch(self, r, v),
            ),
            RequestKind::DeleteRecords(r) => {
                ResponseKind::DeleteRecords(handlers::offsets::delete_records(self, r, v))
            }
            RequestKind::CreateTopics(r) => {
                ResponseKind::CreateTopics(handlers::admin::create_topics(self, r, v))
            }
            RequestKind::DeleteTopics(r) => {
                ResponseKind::DeleteTopics(handlers::admin::delete_topics(self, r, v))
            }
            RequestKind::CreatePartitions(r) => {
                ResponseKind::CreatePartitions(handlers::admin::create_partitions(self, r, v))
            }
            RequestKind::DescribeConfigs(r) => {
                ResponseKind::DescribeConfigs(handlers::admin::describe_configs(self, r, v))
            }
            RequestKind::AlterConfigs(r) => {
                ResponseKind::AlterConfigs(handlers::admin::alter_configs(self, r, v))
            }
            RequestKind::IncrementalAlterConfigs(r) => ResponseKind::IncrementalAlterConfigs(
                handlers::admin::incremental_alter_configs(self, r, v),
            ),
            RequestKind::DescribeLogDirs(r) => {
                ResponseKind::DescribeLogDirs(handlers::log_dirs::describe_log_dirs(self, r, v))
            }
            RequestKind::DescribeProducers(r) => {
                ResponseKind::DescribeProducers(handlers::offsets::describe_producers(self, r, v))
            }
            RequestKind::DescribeCluster(r) => {
                ResponseKind::DescribeCluster(handlers::admin::describe_cluster(self, r, v))
            }
            RequestKind::FindCoordinator(r) => {
                ResponseKind::FindCoordinator(handlers::admin::find_coordinator(self, r, v))
            }
            // The listener is PLAINTEXT only. Kafka answers these on a listener with no SASL
            // (`KafkaApis.handleSaslHandshakeRequest`/`handleSaslAuthenticateRequest`), so a
            // client configured for SASL fails at once with `IllegalSaslStateException`
            // instead of reconnecting for ever to a connection that closes.
            RequestKind::SaslHandshake(_) => ResponseKind::SaslHandshake(
                SaslHandshakeResponse::default()
                    .with_error_code(ResponseError::IllegalSaslState.code()),
            ),
            RequestKind::SaslAuthenticate(_) => ResponseKind::SaslAuthenticate(
                SaslAuthenticateResponse::default()
                    .with_error_code(ResponseError::IllegalSaslState.code())
                    .with_error_message(Some(StrBytes::from_static_str(
                        "SaslAuthenticate request received after successful authentication",
                    ))),
            ),
            other => {
                let api = ctx.api_key;
                match self.coordinator_for(api) {
                    Some(c) => {
                        let r = c.handle(ctx, other);
                        // Wake only the long polls the request may have given something to
                        // read (markers, offsets): a Heartbeat wakes none.
                        match c.wakes(api) {
                            Wakes::Nobody => {}
                            Wakes::All => self.appends.notify(),
                        }
                        r
                    }
                    None => {
                        // The server only passes APIs we advertise; this is a programmer error.
                        tracing::error!(?api, "no handler for an advertised API");
                        return None;
                    }
                }
            }
        })
    }

    fn mirror_versions(&self, api: MirrorApiKey) -> Option<(i16, i16)> {
        match api {
            // Codec only: see `mirror_rpc`'s table.
            MirrorApiKey::WriteMirrorStates | MirrorApiKey::BumpLeaderEpochs => None,
            _ => Some(MirrorApiKey::VERSIONS),
        }
    }

    fn handle_mirror(
        &self,
        ctx: &MirrorRequestContext,
        request: MirrorRequest,
    ) -> Option<MirrorResponse> {
        let Some(me) = self.arc() else {
            tracing::error!(api = ?ctx.api_key, "mirror RPC before the broker registered its Arc");
            return None;
        };
        Some(handlers::mirror_admin::handle(&me, request))
    }

    fn supported_versions(&self, api: ApiKey) -> Option<(i16, i16)> {
        let own = match api {
            ApiKey::ApiVersions => Some((0, 4)),
            ApiKey::Metadata => Some((0, 12)),
            ApiKey::Produce => Some((3, 11)),
            ApiKey::Fetch => Some((4, 16)),
            ApiKey::ListOffsets => Some((1, 8)),
            ApiKey::OffsetForLeaderEpoch => Some((2, 4)),
            ApiKey::DeleteRecords => Some((0, 2)),
            ApiKey::CreateTopics => Some((2, 7)),
            ApiKey::DeleteTopics => Some((1, 6)),
            ApiKey::CreatePartitions => Some((0, 3)),
            ApiKey::DescribeConfigs => Some((1, 4)),
            ApiKey::AlterConfigs => Some((0, 2)),
            ApiKey::IncrementalAlterConfigs => Some((0, 1)),
            ApiKey::DescribeCluster => Some((0, 2)),
            ApiKey::FindCoordinator => Some((0, 6)),
            ApiKey::DescribeProducers => Some((0, 0)),
            ApiKey::DescribeLogDirs => Some((1, 4)),
            ApiKey::SaslHandshake => Some((0, 1)),
            ApiKey::SaslAuthenticate => Some((0, 2)),
            _ => None,
        };
        own.or_else(|| {
            self.coordinator_for(api)
                .and_then(|c| c.supported_versions(api))
        })
    }
}

/// A deadline `ms` from now (saturating).
pub fn deadline_in(ms: i32) -> Instant {
    Instant::now() + Duration::from_millis(ms.max(0) as u64)
}

/// The error code of a [`ResponseError`].
pub fn ec(e: ResponseError) -> i16 {
    e.code()
}

#[cfg(test)]
mod append_notifier_tests {
    use super::AppendNotifier;
    use std::time::{Duration, Instant};

    fn keys(k: &[(&str, i32)]) -> Vec<(String, i32)> {
        k.iter().map(|(t, p)| (t.to_string(), *p)).collect()
    }

    #[test]
    fn only_the_registered_partitions_and_broadcasts_signal_an_interest() {
        let n = AppendNotifier::default();
        let i = n.register(keys(&[("a", 0), ("a", 2)]));
        i.arm();
        n.notify_partition("a", 1);
        n.notify_partition("b", 0);
        n.notify_topic("b");
        assert_eq!(n.wakeups(), 0);
        assert!(!i.wait(Instant::now()), "not signalled");
        n.notify_partition("a", 2);
        n.notify_partition("a", 0);
        assert_eq!(n.wakeups(), 1, "one signal until re-armed");
        assert!(i.wait(Instant::now() + Duration::from_secs(600)));
        i.arm();
        n.notify_topic("a");
        assert!(i.wait(Instant::now() + Duration::from_secs(600)));
        i.arm();
        n.notify();
        assert!(i.wait(Instant::now() + Duration::from_secs(600)));
        assert_eq!(n.wakeups(), 3);
        drop(i);
        assert_eq!(n.waiting(), 0);
        assert!(
            n.waiters.read().is_empty(),
            "deregistered, no empty entries left"
        );
        n.notify_partition("a", 0);
        assert_eq!(n.wakeups(), 3);
    }

    #[test]
    fn a_closed_notifier_never_blocks() {
        let n = AppendNotifier::default();
        let i = n.register(keys(&[("a", 0)]));
        i.arm();
        n.close();
        assert!(n.is_closed());
        i.arm();
        assert!(!i.wait(Instant::now() + Duration::from_secs(600)));
    }
}
