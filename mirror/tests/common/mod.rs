//! Shared by the mirror's integration tests.
#![allow(dead_code)]

// `no_data_path!` names `common::`, also when used here.
use crate::common;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::{LogManager, PartitionHandle};
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_mirror::manager::DestinationTopics;
use mirrorlog_mirror::state::MIRROR_STATE_TOPIC;
use mirrorlog_segment::io::SimStorage;
use std::sync::Arc;

/// The tests' clock start (2023-11-14).
pub const T0: i64 = 1_700_000_000_000;

/// Polls `done` until it holds or `secs` pass; returns whether it held (a hang guard for the
/// tests that run a mirror's threads, never a verdict on time).
pub fn within(secs: u64, done: impl Fn() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !done() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    true
}

/// A log manager on `dir` with the pwrite backend and a manual clock at [`T0`].
pub fn manager(dir: &std::path::Path) -> Arc<LogManager> {
    let (m, _) = LogManager::open(
        mirrorlog_engine::manager::LogManagerConfig::new(dir),
        Arc::new(mirrorlog_segment::io::PwriteStorage::new()),
        mirrorlog_engine::clock::ManualClock::new(T0),
    )
    .unwrap();
    Arc::new(m)
}

/// Partition `p` of the tests' topic `orders`.
pub fn orders(p: i32) -> TopicPartition {
    TopicPartition {
        topic: "orders".into(),
        partition: p,
    }
}

/// Appends `n` records of `value` to `tp` as its leader (epoch 0, timestamps from [`T0`]) and
/// moves the high watermark to the log end.
pub fn produce_to(m: &LogManager, tp: &TopicPartition, value: &[u8], n: usize) {
    let mut b =
        mirrorlog_segment::BatchBuilder::new().compression(mirrorlog_segment::Compression::None);
    for i in 0..n {
        b.append(
            mirrorlog_index::TimestampMs(T0 + i as i64),
            None,
            Some(value),
            &[],
        );
    }
    let h = m.get(tp).unwrap();
    let mut log = h.write();
    log.append_as_leader(
        b.build().into_bytes(),
        mirrorlog_index::LeaderEpoch(0),
        mirrorlog_engine::log::LeaderOrigin::Client,
    )
    .unwrap();
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
}

/// A batch of `n` records keyed `k` and valued `v0`, `v1`…, timestamped `now`, LZ4-compressed
/// or not.
pub fn plain_batch(n: i32, lz4: bool, now: mirrorlog_index::TimestampMs) -> bytes::Bytes {
    let mut b = mirrorlog_segment::BatchBuilder::new().compression(if lz4 {
        mirrorlog_segment::Compression::Lz4
    } else {
        mirrorlog_segment::Compression::None
    });
    for i in 0..n {
        b.append(now, Some(b"k"), Some(format!("v{i}").as_bytes()), &[]);
    }
    b.build().into_bytes()
}

/// A transactional batch of producer `pid` (epoch 0) from sequence `seq`: `n` records valued
/// `t{pid}-{sequence}`, timestamped `now`.
pub fn transactional_batch(
    pid: i64,
    seq: i32,
    n: i32,
    now: mirrorlog_index::TimestampMs,
) -> bytes::Bytes {
    let mut b = mirrorlog_segment::BatchBuilder::new()
        .producer(
            mirrorlog_index::ProducerId(pid),
            mirrorlog_index::ProducerEpoch(0),
            mirrorlog_index::Sequence(seq),
        )
        .transactional(true);
    for i in 0..n {
        b.append(
            now,
            None,
            Some(format!("t{pid}-{}", seq + i).as_bytes()),
            &[],
        );
    }
    b.build().into_bytes()
}

/// A log manager on `dir` over simulated storage (returned, to inject faults into) and a manual
/// clock at [`T0`].
pub fn sim_manager(dir: &std::path::Path) -> (SimStorage, Arc<LogManager>) {
    let sim = SimStorage::new();
    let storage: Arc<dyn mirrorlog_segment::io::Storage> = Arc::new(sim.clone());
    let (m, _) = LogManager::open(
        mirrorlog_engine::manager::LogManagerConfig::new(dir),
        storage,
        mirrorlog_engine::clock::ManualClock::new(T0),
    )
    .unwrap();
    (sim, Arc::new(m))
}

/// A source holding `orders` (two partitions of five records, topic id `[1; 16]`) and an empty
/// destination on simulated storage, one data dir each.
pub struct SimWorld {
    pub src_dir: tempfile::TempDir,
    pub dst_dir: tempfile::TempDir,
    pub src: Arc<LogManager>,
    pub sim: SimStorage,
    pub dst: Arc<LogManager>,
}

/// See [`SimWorld`].
pub fn sim_world() -> SimWorld {
    let (src_dir, dst_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(src_dir.path());
    let (sim, dst) = sim_manager(dst_dir.path());
    for p in 0..2 {
        src.create(&orders(p), TopicId([1; 16]), LogConfig::default())
            .unwrap();
        produce_to(&src, &orders(p), b"v", 5);
    }
    SimWorld {
        src_dir,
        dst_dir,
        src,
        sim,
        dst,
    }
}

/// Cluster mirror `m` of topic `orders` from `src` into `dst` (destination topics [`Dest`]),
/// started and caught up.
pub fn started_mirror(
    src: &Arc<LogManager>,
    dst: &Arc<LogManager>,
    store: Arc<mirrorlog_mirror::state::MirrorStateStore>,
    clock: Arc<mirrorlog_engine::clock::ManualClock>,
) -> Arc<mirrorlog_mirror::manager::MirrorManager> {
    let mirror = mirrorlog_mirror::manager::MirrorManager::new(
        mirrorlog_mirror::manager::MirrorConfig::new("m"),
        mirrorlog_mirror::engine_source::EngineSource::new(src.clone(), "source-cluster", 1),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store,
        clock,
    )
    .unwrap();
    mirror.start_topics(&["orders".to_string()]).unwrap();
    catch_up(&mirror);
    mirror
}

/// Fails `orders` over and mirrors it again (every partition in LOG_ALIGNMENT, which truncates
/// it fully), then drives `mirror` once with partition 0's truncation failing with EIO as it
/// writes the emptied epoch cache; checks that the fault fired.
pub fn fail_a_realignment(mirror: &mirrorlog_mirror::manager::MirrorManager, sim: &SimStorage) {
    use mirrorlog_segment::io::{Fault, FaultKind, IoOp};
    mirror.stop_topic("orders").unwrap();
    mirror.start_topics(&["orders".to_string()]).unwrap();
    assert!(
        mirror
            .describe()
            .iter()
            .all(|p| p.state == mirrorlog_mirror::state::MirrorPartitionState::LogAlignment)
    );
    sim.inject(
        Fault::new(IoOp::WriteAt, FaultKind::Eio).on_path("orders-0/leader-epoch-checkpoint"),
    );
    mirror.drive();
    assert_eq!(sim.pending_faults(), 0, "the fault did not fire");
}

/// Every byte of a partition's log from its log start to its end, as one buffer.
pub fn log_bytes(h: &PartitionHandle) -> bytes::Bytes {
    let log = h.read();
    log.read(
        log.log_start_offset(),
        i32::MAX as u32,
        mirrorlog_engine::log::FetchIsolation::LogEnd,
        true,
    )
    .unwrap()
    .records
    .map(|r| r.slice.read_all().unwrap())
    .unwrap_or_default()
}

/// Destination topics straight on the log manager, as the broker's: created read-only, made
/// read-only again when a stopped topic is mirrored again, writable when stopped.
#[derive(Debug)]
pub struct Dest(pub Arc<LogManager>);

impl Dest {
    fn handles(&self, name: &str) -> Vec<Arc<PartitionHandle>> {
        self.0
            .partitions()
            .into_iter()
            .filter(|h| h.topic_partition().topic == name)
            .collect()
    }
}

impl DestinationTopics for Dest {
    fn ensure_mirror_topic(&self, name: &str, id: [u8; 16], partitions: i32) -> Result<(), String> {
        for p in 0..partitions {
            let tp = TopicPartition {
                topic: name.into(),
                partition: p,
            };
            if self.0.get(&tp).is_none() {
                let cfg = LogConfig {
                    read_only: true,
                    ..LogConfig::default()
                };
                self.0
                    .create(&tp, TopicId(id), cfg)
                    .map_err(|e| e.to_string())?;
            }
        }
        // A stopped topic mirrored again is read-only again (each config write is synced, so
        // only when some partition is writable).
        if self.handles(name).iter().any(|h| !h.read().is_read_only()) {
            self.set_read_only(name, true)?;
        }
        Ok(())
    }
    fn topic_name_for_id(&self, id: [u8; 16]) -> Option<String> {
        self.0
            .partitions()
            .into_iter()
            .find(|h| {
                h.topic_id() == TopicId(id) && h.topic_partition().topic != MIRROR_STATE_TOPIC
            })
            .map(|h| h.topic_partition().topic.clone())
    }
    fn remove_mirror_topic(&self, name: &str) -> Result<(), String> {
        for h in self.handles(name) {
            self.0
                .delete(h.topic_partition())
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
    fn apply_topic_configs(
        &self,
        _name: &str,
        _configs: &[(String, String)],
        _removed: &[String],
    ) -> Result<(), String> {
        Ok(())
    }
    fn set_read_only(&self, name: &str, read_only: bool) -> Result<(), String> {
        for h in self.handles(name) {
            let mut cfg = h.read().config().clone();
            cfg.read_only = read_only;
            self.0
                .update_config(h.topic_partition(), cfg)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// Destination topics that also apply the source's topic configs (as the broker's do).
#[derive(Debug)]
pub struct ConfigDest(pub Dest);

impl DestinationTopics for ConfigDest {
    fn ensure_mirror_topic(&self, name: &str, id: [u8; 16], partitions: i32) -> Result<(), String> {
        self.0.ensure_mirror_topic(name, id, partitions)
    }
    fn topic_name_for_id(&self, id: [u8; 16]) -> Option<String> {
        self.0.topic_name_for_id(id)
    }
    fn remove_mirror_topic(&self, name: &str) -> Result<(), String> {
        self.0.remove_mirror_topic(name)
    }
    fn apply_topic_configs(
        &self,
        name: &str,
        configs: &[(String, String)],
        removed: &[String],
    ) -> Result<(), String> {
        // As the broker does: a removed key takes the destination's default back.
        let defaults = LogConfig::default().to_kafka_pairs();
        let resets: Vec<(String, String)> = removed
            .iter()
            .filter_map(|k| defaults.iter().find(|(d, _)| d == k))
            .map(|(d, v)| (d.to_string(), v.clone()))
            .collect();
        let logs = &self.0.0;
        for h in logs.partitions() {
            if h.topic_partition().topic == name {
                let current = h.read().config().clone();
                let mut next = current
                    .with_topic_overrides(configs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                    .and_then(|c| {
                        c.with_overrides(resets.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                    })
                    .map_err(|e| e.to_string())?;
                next.overrides.retain(|k| !removed.iter().any(|r| r == k));
                next.read_only = current.read_only;
                logs.update_config(h.topic_partition(), next)
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }
    fn topic_overrides(&self, name: &str) -> Vec<(String, String)> {
        let Some(h) = self.0.0.get(&TopicPartition {
            topic: name.into(),
            partition: 0,
        }) else {
            return vec![];
        };
        let log = h.read();
        let config = log.config();
        config
            .to_kafka_pairs()
            .into_iter()
            .filter(|(k, _)| config.is_topic_override(k, &LogConfig::default()))
            .map(|(k, v)| (k.to_string(), v))
            .collect()
    }
    fn set_read_only(&self, name: &str, read_only: bool) -> Result<(), String> {
        self.0.set_read_only(name, read_only)
    }
}

/// Drives `mirror` (fetcher thread 0) until three rounds in a row append nothing: after an
/// election on the source, a fetch in the epoch before is fenced (FENCED_LEADER_EPOCH: the
/// mirror asks the source's metadata) and the next one may find a divergence and truncate;
/// from a source that does not fence, records of an epoch not heard of are checked first
/// instead. Both rounds append nothing; the one after appends.
pub fn catch_up(mirror: &mirrorlog_mirror::manager::MirrorManager) {
    let mut idle = 0;
    for _ in 0..200 {
        mirror.drive();
        if mirror.fetch_round(0) == 0 {
            idle += 1;
            if idle == 3 {
                return;
            }
        } else {
            idle = 0;
        }
    }
    panic!("no convergence");
}

/// The [`SourceCluster`](mirrorlog_mirror::source::SourceCluster) methods of the data path
/// (metadata, fetch, list offsets, epoch end offsets, topic configs), answering `Unsupported`:
/// for test sources that only serve group listings and offsets. Use inside the `impl`.
#[allow(unused_macros)]
macro_rules! no_data_path {
    () => {
        fn metadata(
            &self,
            _: Option<&[String]>,
        ) -> Result<mirrorlog_mirror::source::SourceMetadata, mirrorlog_mirror::source::SourceError>
        {
            Err(common::not_on_the_data_path())
        }
        fn fetch(
            &self,
            _: i32,
            _: &mirrorlog_mirror::source::FetchRequest,
        ) -> Result<mirrorlog_mirror::source::FetchResponse, mirrorlog_mirror::source::SourceError>
        {
            Err(common::not_on_the_data_path())
        }
        fn list_offset(
            &self,
            _: &str,
            _: i32,
            _: mirrorlog_mirror::source::OffsetSpec,
        ) -> Result<
            (mirrorlog_index::Offset, mirrorlog_index::LeaderEpoch),
            mirrorlog_mirror::source::SourceError,
        > {
            Err(common::not_on_the_data_path())
        }
        fn end_offset_for_epoch(
            &self,
            _: &str,
            _: i32,
            _: mirrorlog_index::LeaderEpoch,
            _: mirrorlog_index::LeaderEpoch,
        ) -> Result<
            (mirrorlog_index::LeaderEpoch, mirrorlog_index::Offset),
            mirrorlog_mirror::source::SourceError,
        > {
            Err(common::not_on_the_data_path())
        }
        fn topic_configs(
            &self,
            _: &str,
        ) -> Result<Vec<(String, String)>, mirrorlog_mirror::source::SourceError> {
            Err(common::not_on_the_data_path())
        }
    };
}

/// A source whose every group committed offset 5 of orders-0 ([`committed_five_on_orders`]),
/// for the offset-sync scenarios.
#[derive(Debug)]
pub struct FiveOnOrders;

impl mirrorlog_mirror::source::SourceCluster for FiveOnOrders {
    no_data_path!();
    fn list_groups(
        &self,
    ) -> Result<Vec<mirrorlog_mirror::source::GroupListing>, mirrorlog_mirror::source::SourceError>
    {
        Err(not_on_the_data_path())
    }
    fn committed_offsets(
        &self,
        _: &str,
    ) -> Result<Vec<mirrorlog_mirror::source::CommittedOffset>, mirrorlog_mirror::source::SourceError>
    {
        Ok(committed_five_on_orders())
    }
}

/// What [`no_data_path`] answers.
pub fn not_on_the_data_path() -> mirrorlog_mirror::source::SourceError {
    mirrorlog_mirror::source::SourceError::Unsupported("not asked by this test".into())
}

/// A config with topic overrides `pairs` over the defaults.
pub fn overrides(pairs: &[(&str, &str)]) -> LogConfig {
    LogConfig::default()
        .with_topic_overrides(pairs.iter().copied())
        .unwrap()
}

/// A STOPPED state of partition `p` of mirror `mirror` (a topic failed over earlier), last
/// mirror epoch 0.
pub fn stopped_state(
    mirror: &str,
    id: [u8; 16],
    p: i32,
) -> mirrorlog_mirror::state::PartitionMirrorState {
    use mirrorlog_mirror::state::MirrorPartitionState as S;
    let mut st = mirrorlog_mirror::state::PartitionMirrorState::new(mirror, id, p);
    for target in [S::LogAlignment, S::Mirroring, S::Stopping, S::Stopped] {
        let e = st.state_epoch;
        st.transition(target, e, T0).unwrap();
    }
    st.last_mirror_epoch = mirrorlog_index::LeaderEpoch(0);
    st
}

/// Mirror `name` of `src` (as cluster `source-cluster`, node 1) into `dst`, its topics through
/// [`ConfigDest`], with a claims table of its own and the clock at [`T0`]: a node's mirror,
/// built again at each restart (its restore runs here).
pub fn config_mirror(
    name: &str,
    src: &Arc<LogManager>,
    dst: &Arc<LogManager>,
    store: &Arc<mirrorlog_mirror::state::MirrorStateStore>,
) -> Arc<mirrorlog_mirror::manager::MirrorManager> {
    mirrorlog_mirror::manager::MirrorManager::new_with_claims(
        mirrorlog_mirror::manager::MirrorConfig::new(name),
        mirrorlog_mirror::engine_source::EngineSource::new(src.clone(), "source-cluster", 1),
        dst.clone(),
        Arc::new(ConfigDest(Dest(dst.clone()))),
        store.clone(),
        mirrorlog_engine::clock::ManualClock::new(T0),
        Arc::new(mirrorlog_mirror::claims::TopicClaims::new()),
    )
    .unwrap()
}

/// What a [`Hooked`] source does instead of its engine source.
pub type FetchHook = Box<
    dyn Fn(
            &mirrorlog_mirror::engine_source::EngineSource,
            i32,
            &mirrorlog_mirror::source::FetchRequest,
        )
            -> Result<mirrorlog_mirror::source::FetchResponse, mirrorlog_mirror::source::SourceError>
        + Send
        + Sync,
>;

/// Rewrites an engine source's metadata answer.
pub type MetadataHook = Box<dyn Fn(&mut mirrorlog_mirror::source::SourceMetadata) + Send + Sync>;

/// A metadata hook for a source of two nodes, 1 and 2, each partition led by the node and at
/// the epoch `leader_of(partition)` names (the engine source behind it is node 1, whichever
/// node a fetch hook lets it play).
pub fn two_nodes(
    leader_of: impl Fn(i32) -> (i32, mirrorlog_index::LeaderEpoch) + Send + Sync + 'static,
) -> MetadataHook {
    Box::new(move |md| {
        md.nodes = [1, 2]
            .map(|id| mirrorlog_mirror::source::SourceNode {
                id,
                host: "127.0.0.1".into(),
                port: 9090 + id,
            })
            .to_vec();
        for p in md.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
            (p.leader, p.leader_epoch) = leader_of(p.partition);
        }
    })
}

/// Answers the last-mirror-epoch lookup.
pub type LastMirrorEpochHook = Box<
    dyn Fn() -> Result<
            Option<(mirrorlog_index::LeaderEpoch, mirrorlog_index::Offset)>,
            mirrorlog_mirror::source::SourceError,
        > + Send
        + Sync,
>;

/// An answer to `request` with every partition failed with `error`, its offsets unknown (−1),
/// as Kafka's `ReplicaManager` answers a failed partition read.
pub fn all_failed(
    request: &mirrorlog_mirror::source::FetchRequest,
    error: i16,
) -> mirrorlog_mirror::source::FetchResponse {
    mirrorlog_mirror::source::FetchResponse {
        error: 0,
        partitions: request
            .partitions
            .iter()
            .map(|p| failed(p, error))
            .collect(),
    }
}

/// The answer for `p` failed with `error`, its offsets unknown (−1).
fn failed(
    p: &mirrorlog_mirror::source::PartitionFetch,
    error: i16,
) -> mirrorlog_mirror::source::PartitionData {
    mirrorlog_mirror::source::PartitionData {
        current_leader: None,
        topic: p.topic.clone(),
        partition: p.partition,
        error,
        high_watermark: mirrorlog_index::Offset(-1),
        log_start_offset: mirrorlog_index::Offset(-1),
        diverging_epoch: None,
        records: Default::default(),
    }
}

/// A fetch answered by a node leading each partition in the epoch `epoch_of(partition)` names:
/// the epoch a hook's metadata advertises, which the engine source behind it (node 1, its epoch
/// its latest epoch-cache entry) knows nothing of. Kafka's leader checks a fetch's
/// `current_leader_epoch` against its own (`Partition.localLogWithEpochOrThrow`): older →
/// FENCED_LEADER_EPOCH (74), newer → UNKNOWN_LEADER_EPOCH (75), each with its offsets unknown;
/// the partitions that pass are answered by the engine source, asked without the field.
pub fn fetch_as_leader_in(
    inner: &mirrorlog_mirror::engine_source::EngineSource,
    request: &mirrorlog_mirror::source::FetchRequest,
    epoch_of: impl Fn(i32) -> mirrorlog_index::LeaderEpoch,
) -> Result<mirrorlog_mirror::source::FetchResponse, mirrorlog_mirror::source::SourceError> {
    let fenced = |p: &mirrorlog_mirror::source::PartitionFetch| {
        let ours = epoch_of(p.partition);
        match p.current_leader_epoch {
            e if e.get() < 0 || e == ours => None,
            e if e < ours => Some(74),
            _ => Some(75),
        }
    };
    let mut passed = request.clone();
    passed.partitions.retain(|p| fenced(p).is_none());
    for p in &mut passed.partitions {
        p.current_leader_epoch = mirrorlog_index::LeaderEpoch::NONE;
    }
    let mut answered = mirrorlog_mirror::source::SourceCluster::fetch(inner, 1, &passed)?
        .partitions
        .into_iter();
    let partitions = request
        .partitions
        .iter()
        .map(|p| match fenced(p) {
            None => answered.next().expect("one answer per partition asked"),
            Some(error) => failed(p, error),
        })
        .collect();
    Ok(mirrorlog_mirror::source::FetchResponse {
        error: 0,
        partitions,
    })
}

/// Asserts that the mirror's only partition is MIRRORING, its log ending at `log_end`.
pub fn assert_mirroring_at(
    mirror: &mirrorlog_mirror::manager::MirrorManager,
    log_end: mirrorlog_index::Offset,
) {
    let s = mirror.describe().remove(0);
    assert_eq!(
        (s.state, s.log_end_offset),
        (
            mirrorlog_mirror::state::MirrorPartitionState::Mirroring,
            log_end
        ),
        "{:?}",
        s.failure
    );
}

/// Answers ListOffsets (the engine source's own answer at hand).
pub type ListOffsetHook = Box<
    dyn Fn(
            &mirrorlog_mirror::engine_source::EngineSource,
            mirrorlog_mirror::source::OffsetSpec,
        ) -> Result<
            (mirrorlog_index::Offset, mirrorlog_index::LeaderEpoch),
            mirrorlog_mirror::source::SourceError,
        > + Send
        + Sync,
>;

/// An [`EngineSource`](mirrorlog_mirror::engine_source::EngineSource) with some answers changed
/// by hooks: a source that behaves as a Kafka cluster in one way the engine source does not.
#[derive(Default)]
pub struct Hooks {
    pub metadata: Option<MetadataHook>,
    pub fetch: Option<FetchHook>,
    pub last_mirror_epoch: Option<LastMirrorEpochHook>,
    pub list_offset: Option<ListOffsetHook>,
    /// A source older than Kafka 2.7 (Fetch below v12): fetches carry no `last_fetched_epoch`,
    /// so no answer reports a divergence, and the source says so.
    pub below_fetch_v12: bool,
    /// [`below_fetch_v12`](Self::below_fetch_v12) that can change while the source runs (a
    /// rolling upgrade or downgrade): below v12 while it reads `true`.
    pub below_fetch_v12_now: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Counts the OffsetForLeaderEpoch questions answered.
    pub epoch_questions: Option<Arc<std::sync::atomic::AtomicU64>>,
}

/// See [`Hooks`].
pub struct Hooked {
    pub inner: Arc<mirrorlog_mirror::engine_source::EngineSource>,
    pub hooks: Hooks,
}

impl std::fmt::Debug for Hooked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooked").finish_non_exhaustive()
    }
}

impl Hooked {
    fn below_fetch_v12(&self) -> bool {
        self.hooks.below_fetch_v12
            || self
                .hooks
                .below_fetch_v12_now
                .as_ref()
                .is_some_and(|b| b.load(std::sync::atomic::Ordering::Relaxed))
    }
}

impl mirrorlog_mirror::source::SourceCluster for Hooked {
    fn metadata(
        &self,
        topics: Option<&[String]>,
    ) -> Result<mirrorlog_mirror::source::SourceMetadata, mirrorlog_mirror::source::SourceError>
    {
        let mut m = self.inner.metadata(topics)?;
        if let Some(h) = &self.hooks.metadata {
            h(&mut m);
        }
        Ok(m)
    }
    fn fetch(
        &self,
        node: i32,
        request: &mirrorlog_mirror::source::FetchRequest,
    ) -> Result<mirrorlog_mirror::source::FetchResponse, mirrorlog_mirror::source::SourceError>
    {
        let mut request = request.clone();
        if self.below_fetch_v12() {
            for p in &mut request.partitions {
                p.last_fetched_epoch = mirrorlog_index::LeaderEpoch::NONE;
            }
        }
        match &self.hooks.fetch {
            Some(h) => h(&self.inner, node, &request),
            None => self.inner.fetch(node, &request),
        }
    }
    fn fetch_reports_divergence(
        &self,
        _node: i32,
    ) -> Result<bool, mirrorlog_mirror::source::SourceError> {
        Ok(!self.below_fetch_v12())
    }
    fn list_offset(
        &self,
        topic: &str,
        partition: i32,
        spec: mirrorlog_mirror::source::OffsetSpec,
    ) -> Result<
        (mirrorlog_index::Offset, mirrorlog_index::LeaderEpoch),
        mirrorlog_mirror::source::SourceError,
    > {
        match &self.hooks.list_offset {
            Some(h) => h(&self.inner, spec),
            None => self.inner.list_offset(topic, partition, spec),
        }
    }
    fn end_offset_for_epoch(
        &self,
        topic: &str,
        partition: i32,
        epoch: mirrorlog_index::LeaderEpoch,
        current_leader_epoch: mirrorlog_index::LeaderEpoch,
    ) -> Result<
        (mirrorlog_index::LeaderEpoch, mirrorlog_index::Offset),
        mirrorlog_mirror::source::SourceError,
    > {
        let r = self
            .inner
            .end_offset_for_epoch(topic, partition, epoch, current_leader_epoch);
        if let (Ok(_), Some(n)) = (&r, &self.hooks.epoch_questions) {
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        r
    }
    fn topic_configs(
        &self,
        topic: &str,
    ) -> Result<Vec<(String, String)>, mirrorlog_mirror::source::SourceError> {
        self.inner.topic_configs(topic)
    }
    fn list_groups(
        &self,
    ) -> Result<Vec<mirrorlog_mirror::source::GroupListing>, mirrorlog_mirror::source::SourceError>
    {
        self.inner.list_groups()
    }
    fn committed_offsets(
        &self,
        group_id: &str,
    ) -> Result<Vec<mirrorlog_mirror::source::CommittedOffset>, mirrorlog_mirror::source::SourceError>
    {
        self.inner.committed_offsets(group_id)
    }
    fn last_mirror_epoch(
        &self,
        requester_cluster_id: &str,
        topic_id: [u8; 16],
        partition: i32,
    ) -> Result<
        Option<(mirrorlog_index::LeaderEpoch, mirrorlog_index::Offset)>,
        mirrorlog_mirror::source::SourceError,
    > {
        match &self.hooks.last_mirror_epoch {
            Some(h) => h(),
            None => self
                .inner
                .last_mirror_epoch(requester_cluster_id, topic_id, partition),
        }
    }
}

/// A source with `orders` (`partitions` partitions, topic id `[1; 16]`; partition 0 holds three
/// records), an empty destination, and mirror `config` from the one to the other through
/// `hooks`, on a manual clock at [`T0`] — started and driven once: MIRRORING, nothing fetched.
pub struct HookedWorld {
    pub dirs: (tempfile::TempDir, tempfile::TempDir),
    pub src: Arc<LogManager>,
    pub dst: Arc<LogManager>,
    pub clock: Arc<mirrorlog_engine::clock::ManualClock>,
    pub mirror: Arc<mirrorlog_mirror::manager::MirrorManager>,
}

/// See [`HookedWorld`].
pub fn hooked_world(
    partitions: i32,
    config: mirrorlog_mirror::manager::MirrorConfig,
    hooks: Hooks,
) -> HookedWorld {
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (src, dst) = (manager(dirs.0.path()), manager(dirs.1.path()));
    for p in 0..partitions {
        src.create(&orders(p), TopicId([1; 16]), LogConfig::default())
            .unwrap();
    }
    produce_to(&src, &orders(0), b"v", 3);
    let clock = mirrorlog_engine::clock::ManualClock::new(T0);
    let source = Hooked {
        inner: mirrorlog_mirror::engine_source::EngineSource::new(src.clone(), "source-cluster", 1),
        hooks,
    };
    let store = Arc::new(mirrorlog_mirror::state::MirrorStateStore::open(dst.clone(), 4).unwrap());
    let mirror = mirrorlog_mirror::manager::MirrorManager::new(
        config,
        Arc::new(source),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store,
        clock.clone(),
    )
    .unwrap();
    mirror.start_topics(&["orders".to_string()]).unwrap();
    mirror.drive();
    HookedWorld {
        dirs,
        src,
        dst,
        clock,
        mirror,
    }
}

/// A destination group coordinator for the offset-sync scenarios: records each group whose
/// offset it commits, and refuses the commits of group `busy` (UNKNOWN_MEMBER_ID, as Kafka's
/// coordinator refuses a generation −1 commit to a group that got members).
#[derive(Default)]
pub struct RecordingSink {
    /// The groups committed, in order.
    pub committed: parking_lot::Mutex<Vec<String>>,
    /// The group whose commits are refused.
    pub busy: Option<&'static str>,
}

impl mirrorlog_mirror::group_sync::GroupOffsetsSink for RecordingSink {
    fn is_group_active(&self, _: &str) -> bool {
        false
    }
    fn has_consumer_group(&self, _: &str) -> bool {
        false
    }
    fn commit(
        &self,
        group: &str,
        _: &TopicPartition,
        _: mirrorlog_index::Offset,
        _: mirrorlog_index::LeaderEpoch,
        _: &str,
    ) -> Result<(), String> {
        if self.busy == Some(group) {
            return Err("UNKNOWN_MEMBER_ID".into());
        }
        self.committed.lock().push(group.to_string());
        Ok(())
    }
}

/// A group's commit of offset 5 on orders-0 (epoch 0, no metadata), as the source answers it.
pub fn committed_five_on_orders() -> Vec<mirrorlog_mirror::source::CommittedOffset> {
    vec![mirrorlog_mirror::source::CommittedOffset {
        topic: "orders".into(),
        partition: 0,
        offset: mirrorlog_index::Offset(5),
        leader_epoch: mirrorlog_index::LeaderEpoch(0),
        metadata: None,
    }]
}
