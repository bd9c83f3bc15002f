//! The classic consumer-group coordinator (Kafka's `GroupCoordinator` for `group.protocol=classic`
//! groups): membership and rebalances (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), committed
//! offsets (OffsetCommit, OffsetFetch, TxnOffsetCommit) and administration (ListGroups,
//! DescribeGroups, DeleteGroups), stored in `__consumer_offsets` in Kafka's record format.
//!
//! # Architecture
//!
//! - `__consumer_offsets` has `offsets_topic_partitions` partitions; a group lives in partition
//!   `abs(javaHashCode(group_id)) % partitions` (Kafka's rule, [`GroupCoordinator::partition_for`]).
//!   Each partition is a *shard* (`shard.rs`): its groups behind one mutex held across the durable
//!   append of each change, so a change is applied in memory only once its record is durable and in
//!   the order of the log. Shards work in parallel.
//! - `state.rs` is the group in memory (states, members, protocol votes, offsets); `membership.rs`
//!   the rebalance protocol and its timers; `offsets.rs` offsets and administration; `records.rs`
//!   the byte format (documented there).
//! - JoinGroup and SyncGroup block: a request that must wait is *parked* (a channel's sender sits
//!   in the member) and the calling thread waits outside the lock. The join phase ends when every
//!   known member rejoined, or when [`GroupCoordinator::tick`] finds the rebalance timeout (or the
//!   initial delay) passed; time comes only from the injected clock and `tick`'s argument, so tests
//!   drive it with a manual clock.
//! - On [`GroupCoordinator::open`] every partition is replayed (later records win, tombstones
//!   delete, transactional offsets wait for their producer's COMMIT marker); groups come back with
//!   their generation, protocol and members (a group over `group.max.size` then rebalances, as
//!   Kafka's `onLoaded`).
//!
//! # Invariants
//!
//! - A committed offset is answered by OffsetFetch only after its record is durable.
//! - Every commit passes the commit clamp ([`GroupCoordinator::set_commit_clamp`]) first, so with
//!   KIP-1279's clamp installed no committed offset of a mirror topic is outside
//!   [log start, high watermark] (invariant 6).
//! - Every structure is bounded: members and MEMBER_ID_REQUIRED members per group by
//!   `group_max_size`, parked requests by members (one each), the offsets log by compaction.
//!
//! # Limits
//!
//! - Consumer groups of KIP-848 (ConsumerGroupHeartbeat), share and streams groups are not
//!   handled; their records in `__consumer_offsets` are skipped at load.
//! - OffsetCommit v10 and OffsetFetch v10 (topic ids) are not offered: the codec decodes these
//!   requests up to v9.
//! - The coordinator loads synchronously in `open`, so COORDINATOR_LOAD_IN_PROGRESS is never
//!   returned.
//! - A join phase waiting for a member that never rejoins ends only when `tick` runs; every
//!   `tick` walks all groups and members (no timer wheel), which suits a single-node broker.
//! - The coordinator holds the `__consumer_offsets` partition handles: call
//!   [`GroupCoordinator::shutdown`] (which releases parked requests) and drop it before
//!   `LogManager::shutdown`.

mod config;
mod membership;
mod offsets;
pub mod records;
mod shard;
mod state;

pub use config::GroupConfig;
pub use shard::WriteHook;

use anyhow::Context;
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest,
    DescribeGroupsResponse, GroupId, HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListGroupsRequest,
    ListGroupsResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest,
    OffsetDeleteResponse, OffsetFetchRequest, OffsetFetchResponse, RequestKind, ResponseKind,
    SyncGroupRequest, SyncGroupResponse, TopicName, TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
};
use kafka_protocol::protocol::StrBytes;
use membership::{Env, JoinParams, Reply, SyncParams};
use mirrorlog_engine::clock::Clock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::LogManager;
use mirrorlog_index::{ErrorChain, Offset, TopicId, TopicPartition};
use offsets::{CommitEntry, Committer, Fetched};
use parking_lot::RwLock;
use records::OffsetValue;
use shard::Shard;
use state::{JoinOutcome, Protocol, SyncOutcome};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// The internal topic holding committed offsets and group metadata.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// The longest group id accepted: a record key stores it with an `int16` length.
pub const MAX_GROUP_ID_BYTES: usize = i16::MAX as usize;

/// The authorized operations DescribeGroups reports when asked (no ACLs here: all of a group's
/// operations, READ | DELETE | DESCRIBE as Kafka's bit field).
const GROUP_OPERATIONS: i32 = (1 << 3) | (1 << 6) | (1 << 8);

/// The clamp applied to every committed offset: `(partition, offset) -> offset to store`.
pub type CommitClamp = Box<dyn Fn(&TopicPartition, i64) -> i64 + Send + Sync>;

/// Who sent a request, for member ids and DescribeGroups.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientInfo {
    /// The request header's client id.
    pub client_id: String,
    /// The client's address as Kafka prints it (`/127.0.0.1`).
    pub client_host: String,
}

/// A group's state at one moment, for tools, metrics and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSnapshot {
    /// The state's name (`Empty`, `PreparingRebalance`, `CompletingRebalance`, `Stable`).
    pub state: &'static str,
    /// The generation.
    pub generation_id: i32,
    /// The protocol type.
    pub protocol_type: Option<String>,
    /// The selected protocol.
    pub protocol_name: Option<String>,
    /// The leader's member id.
    pub leader_id: Option<String>,
    /// The member ids, sorted.
    pub members: Vec<String>,
    /// Members with a parked JoinGroup.
    pub awaiting_join: usize,
    /// Members with a parked SyncGroup.
    pub awaiting_sync: usize,
    /// Members told MEMBER_ID_REQUIRED that have not joined yet.
    pub pending_members: usize,
    /// Committed offsets.
    pub committed_offsets: usize,
    /// Transactional offsets staged, over all producers.
    pub staged_offsets: usize,
}

/// The topic id of `__consumer_offsets`: derived from the name (two FNV-1a 64 hashes with
/// different offset bases), so every broker build gives the same id without storing it.
pub fn offsets_topic_id() -> TopicId {
    fn fnv1a(seed: u64, s: &[u8]) -> u64 {
        s.iter().fold(seed, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }
    let name = OFFSETS_TOPIC.as_bytes();
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&fnv1a(0xcbf2_9ce4_8422_2325, name).to_be_bytes());
    id[8..].copy_from_slice(&fnv1a(0x6c62_272e_07bb_0142, name).to_be_bytes());
    let id = TopicId(id);
    assert!(id != TopicId::ZERO && id != TopicId::METADATA_TOPIC);
    id
}

/// Kafka's `partitionFor`: `Utils.abs(groupId.hashCode) % partitions`, the same rule as a
/// transactional id's.
fn partition_for(group_id: &str, partitions: i32) -> i32 {
    crate::txn::state_log::partition_for(group_id, partitions)
}

/// The classic group coordinator. See the module docs.
pub struct GroupCoordinator {
    logs: Arc<LogManager>,
    config: GroupConfig,
    clock: Arc<dyn Clock>,
    /// One per `__consumer_offsets` partition; `None` for a partition whose data directory is
    /// offline: its groups are unavailable (NOT_COORDINATOR) until a restart loads it.
    shards: Vec<Option<Shard>>,
    commit_clamp: RwLock<Option<CommitClamp>>,
    /// Verifies TxnOffsetCommit with the transaction coordinator (KIP-890 part 1); weak, as
    /// the transaction coordinator holds this one.
    txn_verifier: RwLock<Option<std::sync::Weak<dyn crate::txn::TxnVerifier>>>,
    next_retention_check_ms: AtomicI64,
    closed: AtomicBool,
    /// Shared with every shard: told of each change to a `__consumer_offsets` partition.
    written: shard::SharedWriteHook,
}

impl std::fmt::Debug for GroupCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCoordinator")
            .field("config", &self.config)
            .field("shards", &self.shards.len())
            .field("commit_clamp", &self.commit_clamp.read().is_some())
            .finish_non_exhaustive()
    }
}

impl GroupCoordinator {
    /// Opens the coordinator: creates the missing partitions of `__consumer_offsets` (topic id
    /// [`offsets_topic_id`], unlimited retention) and loads every group's offsets and metadata
    /// from them, the partitions in parallel. A partition whose data directory is offline is
    /// neither loaded nor created anew: its groups are answered NOT_COORDINATOR.
    ///
    /// # Errors
    /// An invalid config; an offsets topic with another partition count holding data (groups
    /// would move to other partitions); a partition that cannot be created or read.
    pub fn open(
        logs: Arc<LogManager>,
        config: GroupConfig,
        clock: Arc<dyn Clock>,
    ) -> anyhow::Result<Arc<GroupCoordinator>> {
        config.validate().map_err(anyhow::Error::msg)?;
        let n = config.offsets_topic_partitions;
        let existing: Vec<_> = logs
            .partitions()
            .into_iter()
            .filter(|h| h.topic_partition().topic == OFFSETS_TOPIC)
            .collect();
        if let Some(max) = existing.iter().map(|h| h.topic_partition().partition).max() {
            anyhow::ensure!(
                max < n,
                "{OFFSETS_TOPIC} has partition {max} but offsets.topic.num.partitions is {n}: \
                 the partition count of {OFFSETS_TOPIC} cannot change (groups would lose their offsets)"
            );
        }
        let has_data = existing
            .iter()
            .any(|h| h.read().log_end_offset() > Offset(0));
        anyhow::ensure!(
            existing.len() == n as usize || !has_data,
            "{OFFSETS_TOPIC} holds data in {} partitions but offsets.topic.num.partitions is {n}: \
             the partition count of {OFFSETS_TOPIC} cannot change (groups would lose their offsets)",
            existing.len()
        );
        let mut log_config: LogConfig = logs.default_log_config().clone();
        log_config.retention_ms = -1;
        log_config.retention_bytes = -1;
        log_config.segment.segment_bytes_max = config.offsets_topic_segment_bytes;
        log_config.read_only = false;
        // Created already pinned: `keep_every_record` below then writes only the partitions an
        // older build created unpinned (each write is a `topic.config` sync and a directory
        // sync, on every partition of a fresh broker's start).
        let log_config = log_config
            .keeping_every_record()
            .context("the offsets topic's config")?;
        let written = shard::SharedWriteHook::default();
        let mut shards = Vec::with_capacity(n as usize);
        for p in 0..n {
            let tp = TopicPartition {
                topic: OFFSETS_TOPIC.to_string(),
                partition: p,
            };
            let handle = match logs.lookup(&tp) {
                Ok(Some(h)) => h,
                Ok(None) => logs
                    .create(&tp, offsets_topic_id(), log_config.clone())
                    .with_context(|| format!("creating {tp}"))?,
                // As Kafka, whose coordinator never loads a partition it does not lead: the
                // partition's groups are unavailable (never created anew, empty, elsewhere,
                // which would lose their offsets).
                Err(e @ mirrorlog_engine::error::EngineError::LogDirOffline { .. }) => {
                    tracing::error!("{tp} is not loaded: {e}; its groups are unavailable");
                    shards.push(None);
                    continue;
                }
                Err(e) => return Err(e).with_context(|| format!("looking up {tp}")),
            };
            logs.keep_every_record(&tp)
                .with_context(|| format!("pinning the retention of {tp}"))?;
            shards.push(Some(Shard::new(p, handle, written.clone())));
        }
        let now = clock.now_ms();
        let started = std::time::Instant::now();
        let stats = std::thread::scope(|s| {
            let jobs: Vec<_> = shards
                .iter()
                .flatten()
                .map(|shard| {
                    let config = &config;
                    s.spawn(move || {
                        let mut st = shard.state.lock();
                        let stats = shard.load(&mut st, config, now)?;
                        let env = Env {
                            shard,
                            config,
                            now_ms: now,
                        };
                        for g in st.groups.values_mut() {
                            env.on_loaded(g);
                        }
                        Ok::<_, anyhow::Error>((stats, st.groups.len()))
                    })
                })
                .collect();
            jobs.into_iter()
                .map(|j| j.join().expect("loading a shard panicked"))
                .collect::<anyhow::Result<Vec<_>>>()
        })?;
        let records: u64 = stats.iter().map(|(s, _)| s.records).sum();
        let skipped: u64 = stats.iter().map(|(s, _)| s.skipped).sum();
        let groups: usize = stats.iter().map(|(_, g)| g).sum();
        tracing::info!(
            partitions = n,
            records,
            skipped,
            groups,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "group coordinator loaded {OFFSETS_TOPIC}"
        );
        Ok(Arc::new(GroupCoordinator {
            logs,
            next_retention_check_ms: AtomicI64::new(
                now.saturating_add(config.offsets_retention_check_interval_ms),
            ),
            config,
            clock,
            shards,
            commit_clamp: RwLock::new(None),
            txn_verifier: RwLock::new(None),
            closed: AtomicBool::new(false),
            written,
        }))
    }

    /// The settings.
    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// The `__consumer_offsets` partition holding `group_id` (Kafka: `abs(hash) % partitions`,
    /// with Java's `String.hashCode`).
    pub fn partition_for(&self, group_id: &str) -> i32 {
        partition_for(group_id, self.shards.len() as i32)
    }

    /// Whether this coordinator serves `group_id`: its `__consumer_offsets` partition is
    /// loaded. FindCoordinator answers COORDINATOR_NOT_AVAILABLE for a group it does not serve,
    /// as Kafka does for a coordinator partition without a leader.
    pub fn serves(&self, group_id: &str) -> bool {
        self.shard_for(group_id).is_ok()
    }

    /// The shard of `group_id`, or NOT_COORDINATOR when its partition's data directory is
    /// offline (as Kafka answers for a group whose offsets partition it has not loaded).
    fn shard_for(&self, group_id: &str) -> Result<&Shard, i16> {
        self.shards[self.partition_for(group_id) as usize]
            .as_ref()
            .ok_or(E::NotCoordinator.code())
    }

    /// The loaded shards.
    fn loaded(&self) -> impl Iterator<Item = &Shard> {
        self.shards.iter().flatten()
    }

    fn env<'a>(&'a self, shard: &'a Shard, now_ms: i64) -> Env<'a> {
        Env {
            shard,
            config: &self.config,
            now_ms,
        }
    }

    /// Versions implemented per API, for ApiVersions (None = not handled here).
    pub fn supported_versions(api: ApiKey) -> Option<(i16, i16)> {
        Some(match api {
            ApiKey::JoinGroup => (0, 9),
            ApiKey::SyncGroup => (0, 5),
            ApiKey::Heartbeat => (0, 4),
            ApiKey::LeaveGroup => (0, 5),
            // v10 addresses topics by id; the codec decodes OffsetCommit/OffsetFetch up to v9.
            ApiKey::OffsetCommit => (2, 9),
            ApiKey::OffsetFetch => (1, 9),
            ApiKey::ListGroups => (0, 5),
            ApiKey::DescribeGroups => (0, 6),
            ApiKey::DeleteGroups => (0, 2),
            ApiKey::TxnOffsetCommit => (0, 5),
            ApiKey::OffsetDelete => (0, 0),
            _ => return None,
        })
    }

    /// Handles JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
    /// ListGroups, DescribeGroups, DeleteGroups, TxnOffsetCommit, OffsetDelete, as from an unnamed client (see
    /// [`handle_from`](Self::handle_from)). May block: JoinGroup until the join phase ends,
    /// SyncGroup until the leader's assignment.
    ///
    /// # Panics
    /// On any other request kind, or a version outside [`supported_versions`](Self::supported_versions):
    /// the dispatcher's error.
    pub fn handle(&self, api_version: i16, request: RequestKind) -> ResponseKind {
        self.handle_from(&ClientInfo::default(), api_version, request)
    }

    /// As [`handle`](Self::handle), with the client's id (member ids start with it) and host
    /// (DescribeGroups shows both).
    ///
    /// # Panics
    /// As [`handle`](Self::handle).
    pub fn handle_from(
        &self,
        client: &ClientInfo,
        api_version: i16,
        request: RequestKind,
    ) -> ResponseKind {
        let check = |api: ApiKey| {
            let (lo, hi) = Self::supported_versions(api).expect("a group API");
            assert!(
                (lo..=hi).contains(&api_version),
                "{api:?} v{api_version} is outside the supported {lo}..={hi}"
            );
        };
        match request {
            RequestKind::JoinGroup(r) => {
                check(ApiKey::JoinGroup);
                ResponseKind::JoinGroup(self.join_group(client, api_version, r))
            }
            RequestKind::SyncGroup(r) => {
                check(ApiKey::SyncGroup);
                ResponseKind::SyncGroup(self.sync_group(r))
            }
            RequestKind::Heartbeat(r) => {
                check(ApiKey::Heartbeat);
                ResponseKind::Heartbeat(self.heartbeat(r))
            }
            RequestKind::LeaveGroup(r) => {
                check(ApiKey::LeaveGroup);
                ResponseKind::LeaveGroup(self.leave_group(api_version, r))
            }
            RequestKind::OffsetCommit(r) => {
                check(ApiKey::OffsetCommit);
                ResponseKind::OffsetCommit(self.offset_commit(api_version, r))
            }
            RequestKind::OffsetFetch(r) => {
                check(ApiKey::OffsetFetch);
                ResponseKind::OffsetFetch(self.offset_fetch(api_version, r))
            }
            RequestKind::TxnOffsetCommit(r) => {
                check(ApiKey::TxnOffsetCommit);
                ResponseKind::TxnOffsetCommit(self.txn_offset_commit(api_version, r))
            }
            RequestKind::ListGroups(r) => {
                check(ApiKey::ListGroups);
                ResponseKind::ListGroups(self.list_groups(api_version, r))
            }
            RequestKind::DescribeGroups(r) => {
                check(ApiKey::DescribeGroups);
                ResponseKind::DescribeGroups(self.describe_groups(api_version, r))
            }
            RequestKind::DeleteGroups(r) => {
                check(ApiKey::DeleteGroups);
                ResponseKind::DeleteGroups(self.delete_groups(r))
            }
            RequestKind::OffsetDelete(r) => {
                check(ApiKey::OffsetDelete);
                ResponseKind::OffsetDelete(self.offset_delete(r))
            }
            other => panic!(
                "GroupCoordinator::handle got a request it does not handle: {:.120}",
                format!("{other:?}")
            ),
        }
    }

    /// Transactions: the transaction coordinator calls this after it wrote the COMMIT/ABORT
    /// marker to the `__consumer_offsets` partitions in `partitions`; the producer's staged
    /// TxnOffsetCommit offsets there become committed (commit) or are dropped (abort). Offsets
    /// staged in a partition that got no marker stay staged, as a replay of that partition would
    /// leave them (Kafka completes them only where the marker is). As in Kafka, the epoch is not
    /// checked: the marker decides (it is only logged).
    pub fn complete_txn(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        partitions: &[i32],
    ) {
        let mut applied = 0;
        for &p in partitions {
            if let Some(shard) = usize::try_from(p)
                .ok()
                .and_then(|i| self.shards.get(i)?.as_ref())
            {
                applied += shard.state.lock().complete_txn(producer_id, commit);
            }
        }
        tracing::debug!(
            producer_id,
            producer_epoch,
            commit,
            applied,
            "transactional offsets completed"
        );
    }

    /// Called by a background ticker (every ~100 ms): expires members whose session timed out
    /// (triggering a rebalance), ends join phases whose rebalance timeout (or initial delay)
    /// passed, drops members that did not sync in time; every
    /// `offsets_retention_check_interval_ms` expires offsets and removes dead groups; compacts
    /// the offsets log when due.
    pub fn tick(&self, now_ms: i64) {
        for shard in self.loaded() {
            let mut st = shard.state.lock();
            let env = self.env(shard, now_ms);
            for g in st.groups.values_mut() {
                env.tick_group(g);
            }
        }
        let due = self.next_retention_check_ms.load(Ordering::Relaxed);
        if now_ms >= due
            && self
                .next_retention_check_ms
                .compare_exchange(
                    due,
                    now_ms.saturating_add(self.config.offsets_retention_check_interval_ms),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            for shard in self.loaded() {
                shard.expire_offsets(&self.config, now_ms);
            }
        }
        for shard in self.loaded() {
            shard.maybe_compact(&self.config, now_ms);
        }
    }

    /// Stops parking requests: every parked JoinGroup and SyncGroup is answered
    /// NOT_COORDINATOR (retriable: clients look for the coordinator again), and later ones are
    /// answered so at once, so that request threads finish and the coordinator (with its
    /// partition handles) can be dropped before `LogManager::shutdown`. Other requests keep
    /// working. Kafka does the same when it unloads an offsets partition.
    pub fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        for shard in self.loaded() {
            let mut st = shard.state.lock();
            for g in st.groups.values_mut() {
                g.release_parked(E::NotCoordinator.code());
            }
        }
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Kafka's `onPartitionsDeleted`: the committed offsets of a deleted topic's partitions are
    /// tombstoned and forgotten, so a topic created again under the same name (a new topic,
    /// offsets from 0) is not resumed at an offset committed for the old one. A shard whose
    /// tombstones cannot be written keeps its offsets (they are logged). Returns how many
    /// offsets were dropped.
    pub fn on_topic_deleted(&self, topic: &str) -> usize {
        let mut dropped = 0;
        for shard in self.loaded() {
            let mut st = shard.state.lock();
            let mut doomed: Vec<(String, TopicPartition)> = vec![];
            for (gid, g) in &st.groups {
                // Committed offsets and offsets staged by open transactions alike (Kafka's
                // `removeOffsets`): a staged one would otherwise be committed at the marker.
                let tps: std::collections::BTreeSet<&TopicPartition> = g
                    .offsets
                    .keys()
                    .chain(g.pending_txn.values().flat_map(|s| s.keys()))
                    .filter(|tp| tp.topic == topic)
                    .collect();
                doomed.extend(tps.into_iter().map(|tp| (gid.clone(), tp.clone())));
            }
            if doomed.is_empty() {
                continue;
            }
            let recs: Result<Vec<_>, _> = doomed
                .iter()
                .map(|(gid, tp)| {
                    records::offset_key(gid, &tp.topic, tp.partition).map(|k| (k, None))
                })
                .collect();
            let written = match recs {
                Ok(recs) => shard
                    .append(&recs, None, self.clock.now_ms())
                    .map_err(|e| ErrorChain(&e).to_string()),
                Err(e) => Err(format!("{e:?}")),
            };
            if let Err(e) = written {
                tracing::warn!(
                    topic,
                    "dropping the deleted topic's committed offsets failed: {e}"
                );
                continue;
            }
            for (gid, tp) in &doomed {
                if let Some(g) = st.groups.get_mut(gid) {
                    if g.offsets.contains_key(tp) {
                        dropped += 1;
                    }
                    g.delete_offset(tp);
                }
            }
        }
        dropped
    }

    /// Whether a group has members (KIP-1279 offset sync skips active groups).
    pub fn is_group_active(&self, group_id: &str) -> bool {
        let Ok(shard) = self.shard_for(group_id) else {
            return false;
        };
        let st = shard.state.lock();
        st.groups.get(group_id).is_some_and(|g| g.num_members() > 0)
    }

    /// Sets the clamp applied to every commit (OffsetCommit and TxnOffsetCommit) before it is
    /// stored — KIP-1279 invariant 6: a commit to a mirror topic is clamped to [log start, high
    /// watermark]. When the clamp changes an offset, the committed leader epoch becomes the
    /// partition's epoch at the new offset (−1 if unknown). Default: none. The clamp runs outside
    /// the coordinator's locks but must not call back into the coordinator's commit path.
    pub fn set_commit_clamp(&self, f: CommitClamp) {
        *self.commit_clamp.write() = Some(f);
    }

    /// Sets the hook told the partition number after every change the coordinator makes to
    /// `__consumer_offsets` — records appended by a request, by [`tick`](Self::tick) (a member
    /// expired by its session timeout, offset expiry, compaction), by a mirror's group commit or
    /// by a topic deletion, and a log start moved by compaction — once it is in the log, so that
    /// the broker wakes the long polls on that partition alone (Kafka's coordinator completes
    /// the delayed fetches of the partition it appended to). Called with a shard's lock held: it
    /// must not call back into the coordinator. Set once; later calls are ignored.
    pub fn set_write_hook(&self, hook: WriteHook) {
        let _ = self.written.set(hook);
    }

    /// Sets the transaction coordinator that verifies TxnOffsetCommit (KIP-890 part 1): the
    /// offsets are staged only if the group's `__consumer_offsets` partition is in the
    /// producer's open transaction (AddOffsetsToTxn put it there), and while that transaction
    /// cannot end — so staged offsets always meet their marker. Answers as Kafka's:
    /// `INVALID_TXN_STATE` (not in the transaction; `TRANSACTION_ABORTABLE` from v4),
    /// `INVALID_PRODUCER_EPOCH` (fenced),
    /// `INVALID_PRODUCER_ID_MAPPING`, `CONCURRENT_TRANSACTIONS` (the previous transaction is
    /// completing). Default: none (commits are staged unverified, as by Kafka before 3.6).
    pub fn set_txn_verifier(&self, verifier: std::sync::Weak<dyn crate::txn::TxnVerifier>) {
        *self.txn_verifier.write() = Some(verifier);
    }

    /// A group's state now, or `None` if there is no such group.
    pub fn group_snapshot(&self, group_id: &str) -> Option<GroupSnapshot> {
        let st = self.shard_for(group_id).ok()?.state.lock();
        let g = st.groups.get(group_id)?;
        Some(GroupSnapshot {
            state: g.state().name(),
            generation_id: g.generation_id,
            protocol_type: g.protocol_type.clone(),
            protocol_name: g.protocol_name.clone(),
            leader_id: g.leader_id.clone(),
            members: g.member_ids(),
            awaiting_join: g.num_awaiting_join(),
            awaiting_sync: g.members().filter(|m| m.is_awaiting_sync()).count(),
            pending_members: g.pending_join.len(),
            committed_offsets: g.offsets.len(),
            staged_offsets: g.pending_txn.values().map(|s| s.len()).sum(),
        })
    }

    /// Records in each `__consumer_offsets` partition from its log start, as counted by the
    /// coordinator (for tests and metrics).
    pub fn offsets_log_records(&self) -> Vec<i64> {
        self.shards
            .iter()
            .map(|s| s.as_ref().map_or(0, Shard::records_in_log))
            .collect()
    }

    /// A commit entry: the partition's existence, the metadata bound, then the clamp.
    fn commit_entry(&self, tp: TopicPartition, mut v: OffsetValue) -> CommitEntry {
        // First, as Kafka's `KafkaApis` answers it before the coordinator looks at metadata.
        let Some(handle) = self.logs.get(&tp) else {
            return (tp, Err(E::UnknownTopicOrPartition.code()));
        };
        // Kafka bounds the Java string's `length()`, in UTF-16 code units; the record's
        // `int16` length bounds its UTF-8 bytes.
        let max = self.config.offset_metadata_max_bytes as usize;
        if v.metadata.len() > i16::MAX as usize
            || (v.metadata.len() > max && v.metadata.encode_utf16().count() > max)
        {
            return (tp, Err(E::OffsetMetadataTooLarge.code()));
        }
        if let Some(clamp) = self.commit_clamp.read().as_ref() {
            let clamped = clamp(&tp, v.offset);
            if clamped != v.offset {
                tracing::debug!(partition = %tp, offset = v.offset, clamped, "commit clamped");
                v.offset = clamped;
                v.leader_epoch = handle
                    .read()
                    .epoch_at(Offset(clamped))
                    .map_or(-1, |e| e.get());
            }
        }
        (tp, Ok(v))
    }

    fn join_group(&self, client: &ClientInfo, v: i16, r: JoinGroupRequest) -> JoinGroupResponse {
        let member_id = r.member_id.to_string();
        let outcome = (|| {
            let group_id = r.group_id.0.to_string();
            if group_id.is_empty() || group_id.len() > MAX_GROUP_ID_BYTES {
                return JoinOutcome::error(E::InvalidGroupId.code(), &member_id);
            }
            let session = r.session_timeout_ms;
            if session < self.config.group_min_session_timeout_ms
                || session > self.config.group_max_session_timeout_ms
            {
                return JoinOutcome::error(E::InvalidSessionTimeout.code(), &member_id);
            }
            // v0 has no rebalance timeout: the session timeout stands in (as Kafka).
            let rebalance = if v == 0 || r.rebalance_timeout_ms < 0 {
                session
            } else {
                r.rebalance_timeout_ms
            };
            let mut seen = HashSet::new();
            let protocols: Vec<Protocol> = r
                .protocols
                .iter()
                .filter(|p| seen.insert(p.name.to_string()))
                .map(|p| Protocol {
                    name: p.name.to_string(),
                    metadata: p.metadata.clone(),
                })
                .collect();
            let params = JoinParams {
                api_version: v,
                group_id,
                member_id: member_id.clone(),
                group_instance_id: r
                    .group_instance_id
                    .as_ref()
                    .map(|s| s.to_string())
                    .filter(|s| v >= 5 && !s.is_empty()),
                client_id: client.client_id.clone(),
                client_host: client.client_host.clone(),
                session_timeout_ms: session,
                rebalance_timeout_ms: rebalance,
                protocol_type: r.protocol_type.to_string(),
                protocols,
            };
            let shard = match self.shard_for(&params.group_id) {
                Ok(shard) => shard,
                Err(code) => return JoinOutcome::error(code, &member_id),
            };
            let reply = {
                let mut st = shard.state.lock();
                // Checked under the lock: `shutdown` releases what parked before it.
                if self.is_closed() {
                    return JoinOutcome::error(E::NotCoordinator.code(), &member_id);
                }
                self.env(shard, self.clock.now_ms())
                    .join(&mut st.groups, params)
            };
            match reply {
                Reply::Now(o) => o,
                Reply::Wait(rx) => rx
                    .recv()
                    .unwrap_or_else(|_| JoinOutcome::error(E::UnknownMemberId.code(), &member_id)),
            }
        })();
        join_response(v, outcome)
    }

    fn sync_group(&self, r: SyncGroupRequest) -> SyncGroupResponse {
        let params = SyncParams {
            group_id: r.group_id.0.to_string(),
            member_id: r.member_id.to_string(),
            group_instance_id: r
                .group_instance_id
                .as_ref()
                .map(|s| s.to_string())
                .filter(|s| !s.is_empty()),
            generation_id: r.generation_id,
            protocol_type: r.protocol_type.as_ref().map(|s| s.to_string()),
            protocol_name: r.protocol_name.as_ref().map(|s| s.to_string()),
            assignments: r
                .assignments
                .into_iter()
                .map(|a| (a.member_id.to_string(), a.assignment))
                .collect(),
        };
        if params.group_id.is_empty() {
            return SyncGroupResponse::default().with_error_code(E::InvalidGroupId.code());
        }
        let shard = match self.shard_for(&params.group_id) {
            Ok(shard) => shard,
            Err(code) => return SyncGroupResponse::default().with_error_code(code),
        };
        let reply = {
            let mut st = shard.state.lock();
            if self.is_closed() {
                return SyncGroupResponse::default().with_error_code(E::NotCoordinator.code());
            }
            self.env(shard, self.clock.now_ms())
                .sync(&mut st.groups, params)
        };
        let o = match reply {
            Reply::Now(o) => o,
            Reply::Wait(rx) => rx
                .recv()
                .unwrap_or_else(|_| SyncOutcome::error(E::UnknownMemberId.code())),
        };
        SyncGroupResponse::default()
            .with_error_code(o.error)
            .with_protocol_type(o.protocol_type.map(StrBytes::from_string))
            .with_protocol_name(o.protocol_name.map(StrBytes::from_string))
            .with_assignment(o.assignment)
    }

    fn heartbeat(&self, r: HeartbeatRequest) -> HeartbeatResponse {
        let group_id = r.group_id.0.to_string();
        if group_id.is_empty() {
            return HeartbeatResponse::default().with_error_code(E::InvalidGroupId.code());
        }
        let shard = match self.shard_for(&group_id) {
            Ok(shard) => shard,
            Err(code) => return HeartbeatResponse::default().with_error_code(code),
        };
        let mut st = shard.state.lock();
        let code = self.env(shard, self.clock.now_ms()).heartbeat(
            &mut st.groups,
            &group_id,
            &r.member_id,
            r.group_instance_id.as_deref().filter(|s| !s.is_empty()),
            r.generation_id,
        );
        HeartbeatResponse::default().with_error_code(code)
    }

    fn leave_group(&self, v: i16, r: LeaveGroupRequest) -> LeaveGroupResponse {
        let group_id = r.group_id.0.to_string();
        let members: Vec<(String, Option<String>)> = if v <= 2 {
            vec![(r.member_id.to_string(), None)]
        } else {
            r.members
                .iter()
                .map(|m| {
                    (
                        m.member_id.to_string(),
                        m.group_instance_id
                            .as_ref()
                            .map(|s| s.to_string())
                            .filter(|s| !s.is_empty()),
                    )
                })
                .collect()
        };
        if group_id.is_empty() {
            return LeaveGroupResponse::default().with_error_code(E::InvalidGroupId.code());
        }
        let shard = match self.shard_for(&group_id) {
            Ok(shard) => shard,
            Err(code) => return LeaveGroupResponse::default().with_error_code(code),
        };
        let result = {
            let mut st = shard.state.lock();
            self.env(shard, self.clock.now_ms())
                .leave(&mut st.groups, &group_id, &members)
        };
        match result {
            Err(code) => LeaveGroupResponse::default().with_error_code(code),
            Ok(codes) if v <= 2 => LeaveGroupResponse::default().with_error_code(codes[0]),
            Ok(codes) => LeaveGroupResponse::default().with_members(
                members
                    .into_iter()
                    .zip(codes)
                    .map(|((id, instance), code)| {
                        MemberResponse::default()
                            .with_member_id(StrBytes::from_string(id))
                            .with_group_instance_id(instance.map(StrBytes::from_string))
                            .with_error_code(code)
                    })
                    .collect(),
            ),
        }
    }

    /// Commits `entries` for `c` and answers each entry's error code in order.
    fn commit(&self, c: &Committer, entries: Vec<CommitEntry>, now_ms: i64) -> Vec<i16> {
        with_known_partitions(entries, |entries| self.commit_known(c, entries, now_ms))
    }

    /// [`commit`](Self::commit) of partitions the broker had when `commit_entry` looked.
    fn commit_known(&self, c: &Committer, entries: Vec<CommitEntry>, now_ms: i64) -> Vec<i16> {
        if c.group_id.is_empty() || c.group_id.len() > MAX_GROUP_ID_BYTES {
            return vec![E::InvalidGroupId.code(); entries.len()];
        }
        let shard = match self.shard_for(&c.group_id) {
            Ok(shard) => shard,
            Err(code) => return vec![code; entries.len()],
        };
        let mut st = shard.state.lock();
        // Checked again under the lock `on_topic_deleted` drops a deleted topic's offsets under
        // (its partitions already gone from the log manager): a deletion since `commit_entry`
        // looked either dropped what this writes, or is seen here. Otherwise an offset of the
        // deleted topic would stay, for a topic created again under the name to resume from.
        let entries = entries
            .into_iter()
            .map(|(tp, v)| match v {
                Ok(_) if self.logs.get(&tp).is_none() => {
                    (tp, Err(E::UnknownTopicOrPartition.code()))
                }
                v => (tp, v),
            })
            .collect();
        with_known_partitions(entries, |entries| {
            self.env(shard, now_ms).commit_offsets(&mut st, c, entries)
        })
    }

    fn offset_commit(&self, v: i16, r: OffsetCommitRequest) -> OffsetCommitResponse {
        let now = self.clock.now_ms();
        // OffsetCommit v2–v4 may carry a retention time; −1 means the broker's.
        let expire =
            (v <= 4 && r.retention_time_ms != -1).then(|| now.saturating_add(r.retention_time_ms));
        let mut entries = Vec::new();
        for t in &r.topics {
            for p in &t.partitions {
                entries.push(self.commit_entry(
                    TopicPartition {
                        topic: t.name.to_string(),
                        partition: p.partition_index,
                    },
                    OffsetValue {
                        offset: p.committed_offset,
                        leader_epoch: if v >= 6 { p.committed_leader_epoch } else { -1 },
                        metadata: p.committed_metadata.as_deref().unwrap_or("").to_string(),
                        commit_timestamp_ms: now,
                        expire_timestamp_ms: expire,
                    },
                ));
            }
        }
        let committer = Committer {
            api_version: v,
            group_id: r.group_id.0.to_string(),
            member_id: r.member_id.to_string(),
            group_instance_id: r
                .group_instance_id
                .as_ref()
                .map(|s| s.to_string())
                .filter(|s| !s.is_empty()),
            generation_id: r.generation_id_or_member_epoch,
            txn: None,
        };
        let mut codes = self.commit(&committer, entries, now).into_iter();
        OffsetCommitResponse::default().with_topics(
            r.topics
                .iter()
                .map(|t| {
                    OffsetCommitResponseTopic::default()
                        .with_name(t.name.clone())
                        .with_partitions(
                            t.partitions
                                .iter()
                                .map(|p| {
                                    OffsetCommitResponsePartition::default()
                                        .with_partition_index(p.partition_index)
                                        .with_error_code(codes.next().expect("one per partition"))
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
    }

    fn txn_offset_commit(&self, v: i16, r: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse {
        let now = self.clock.now_ms();
        let n: usize = r.topics.iter().map(|t| t.partitions.len()).sum();
        let codes = if r.producer_id.0 < 0 {
            vec![E::InvalidProducerIdMapping.code(); n]
        } else {
            let mut entries = Vec::with_capacity(n);
            for t in &r.topics {
                for p in &t.partitions {
                    entries.push(self.commit_entry(
                        TopicPartition {
                            topic: t.name.to_string(),
                            partition: p.partition_index,
                        },
                        OffsetValue {
                            offset: p.committed_offset,
                            leader_epoch: p.committed_leader_epoch,
                            metadata: p.committed_metadata.as_deref().unwrap_or("").to_string(),
                            commit_timestamp_ms: now,
                            expire_timestamp_ms: None,
                        },
                    ));
                }
            }
            let committer = Committer {
                api_version: v,
                group_id: r.group_id.0.to_string(),
                member_id: r.member_id.to_string(),
                group_instance_id: r
                    .group_instance_id
                    .as_ref()
                    .map(|s| s.to_string())
                    .filter(|s| !s.is_empty()),
                generation_id: r.generation_id,
                txn: Some((r.producer_id.0, r.producer_epoch)),
            };
            let verifier = (!committer.group_id.is_empty())
                .then(|| self.txn_verifier.read().as_ref().and_then(|w| w.upgrade()))
                .flatten();
            match verifier {
                None => self.commit(&committer, entries, now),
                // Partitions the broker does not have are answered before verification, as
                // Kafka's `KafkaApis` does.
                Some(verifier) => with_known_partitions(entries, |entries| {
                    let tp = TopicPartition {
                        topic: OFFSETS_TOPIC.to_string(),
                        partition: self.partition_for(&committer.group_id),
                    };
                    let n = entries.len();
                    crate::txn::verified(
                        &*verifier,
                        &r.transactional_id.0,
                        r.producer_id.0,
                        r.producer_epoch,
                        &tp,
                        || self.commit(&committer, entries, now),
                    )
                    .unwrap_or_else(|e| vec![txn_offset_commit_verification_error(&e, v); n])
                }),
            }
        };
        let mut codes = codes.into_iter();
        TxnOffsetCommitResponse::default().with_topics(
            r.topics
                .iter()
                .map(|t| {
                    TxnOffsetCommitResponseTopic::default()
                        .with_name(t.name.clone())
                        .with_partitions(
                            t.partitions
                                .iter()
                                .map(|p| {
                                    TxnOffsetCommitResponsePartition::default()
                                        .with_partition_index(p.partition_index)
                                        .with_error_code(codes.next().expect("one per partition"))
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
    }

    /// Fetches one group's offsets: `Err` is a group-level error.
    fn fetch_group(
        &self,
        group_id: &str,
        topics: Option<Vec<(String, Vec<i32>)>>,
        require_stable: bool,
    ) -> Result<Vec<(String, Vec<Fetched>)>, i16> {
        // The empty id is looked up like any other (Kafka refuses only a null one, "for
        // backwards compatibility"): no group has it, so nothing is committed.
        let shard = self.shard_for(group_id)?;
        let st = shard.state.lock();
        Ok(self.env(shard, self.clock.now_ms()).fetch_offsets(
            &st.groups,
            group_id,
            topics,
            require_stable,
        ))
    }

    fn offset_fetch(&self, v: i16, r: OffsetFetchRequest) -> OffsetFetchResponse {
        let require_stable = v >= 7 && r.require_stable;
        if v <= 7 {
            let topics = r.topics.as_ref().map(|ts| {
                ts.iter()
                    .map(|t| (t.name.to_string(), t.partition_indexes.clone()))
                    .collect::<Vec<_>>()
            });
            let result = self.fetch_group(&r.group_id, topics.clone(), require_stable);
            let (error, fetched) = match result {
                Ok(f) => (0, f),
                // Version 1 has no group-level error: each asked partition carries it (offset
                // −1, no metadata). From version 2 the error comes alone, with no partitions, as
                // Kafka's `OffsetFetchResponse.groupError` answers.
                Err(code) if v < 2 => (
                    code,
                    topics
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(t, ps)| {
                            let f = ps
                                .into_iter()
                                .map(|p| Fetched {
                                    partition: p,
                                    offset: -1,
                                    leader_epoch: -1,
                                    metadata: String::new(),
                                    error: code,
                                })
                                .collect();
                            (t, f)
                        })
                        .collect(),
                ),
                Err(code) => (code, vec![]),
            };
            return OffsetFetchResponse::default()
                .with_error_code(error)
                .with_topics(
                    fetched
                        .into_iter()
                        .map(|(t, ps)| {
                            OffsetFetchResponseTopic::default()
                                .with_name(TopicName(StrBytes::from_string(t)))
                                .with_partitions(
                                    ps.into_iter()
                                        .map(|f| {
                                            OffsetFetchResponsePartition::default()
                                                .with_partition_index(f.partition)
                                                .with_committed_offset(f.offset)
                                                .with_committed_leader_epoch(f.leader_epoch)
                                                .with_metadata(Some(StrBytes::from_string(
                                                    f.metadata,
                                                )))
                                                .with_error_code(f.error)
                                        })
                                        .collect(),
                                )
                        })
                        .collect(),
                );
        }
        let groups = r
            .groups
            .iter()
            .map(|g| {
                let topics = g.topics.as_ref().map(|ts| {
                    ts.iter()
                        .map(|t| (t.name.to_string(), t.partition_indexes.clone()))
                        .collect::<Vec<_>>()
                });
                let (error, fetched) = match self.fetch_group(&g.group_id, topics, require_stable) {
                    Ok(f) => (0, f),
                    Err(code) => (code, vec![]),
                };
                OffsetFetchResponseGroup::default()
                    .with_group_id(g.group_id.clone())
                    .with_error_code(error)
                    .with_topics(
                        fetched
                            .into_iter()
                            .map(|(t, ps)| {
                                OffsetFetchResponseTopics::default()
                                    .with_name(TopicName(StrBytes::from_string(t)))
                                    .with_partitions(
                                        ps.into_iter()
                                            .map(|f| {
                                                OffsetFetchResponsePartitions::default()
                                                    .with_partition_index(f.partition)
                                                    .with_committed_offset(f.offset)
                                                    .with_committed_leader_epoch(f.leader_epoch)
                                                    .with_metadata(Some(StrBytes::from_string(
                                                        f.metadata,
                                                    )))
                                                    .with_error_code(f.error)
                                            })
                                            .collect(),
                                    )
                            })
                            .collect(),
                    )
            })
            .collect();
        OffsetFetchResponse::default().with_groups(groups)
    }

    fn list_groups(&self, v: i16, r: ListGroupsRequest) -> ListGroupsResponse {
        let states: HashSet<String> = if v >= 4 {
            r.states_filter.iter().map(|s| s.to_lowercase()).collect()
        } else {
            HashSet::new()
        };
        let types: HashSet<String> = if v >= 5 {
            r.types_filter.iter().map(|s| s.to_lowercase()).collect()
        } else {
            HashSet::new()
        };
        let mut out = Vec::new();
        if types.is_empty() || types.contains("classic") {
            for shard in self.loaded() {
                let st = shard.state.lock();
                for g in st.groups.values() {
                    let state = g.state().name();
                    if g.is(state::GroupState::Dead)
                        || (!states.is_empty() && !states.contains(&state.to_lowercase()))
                    {
                        continue;
                    }
                    out.push(
                        ListedGroup::default()
                            .with_group_id(GroupId(StrBytes::from_string(g.group_id.clone())))
                            .with_protocol_type(StrBytes::from_string(
                                g.protocol_type.clone().unwrap_or_default(),
                            ))
                            .with_group_state(StrBytes::from_static_str(state))
                            .with_group_type(StrBytes::from_static_str("classic")),
                    );
                }
            }
        }
        out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        ListGroupsResponse::default().with_groups(out)
    }

    fn describe_groups(&self, v: i16, r: DescribeGroupsRequest) -> DescribeGroupsResponse {
        let ops = if r.include_authorized_operations {
            GROUP_OPERATIONS
        } else {
            i32::MIN
        };
        let groups = r
            .groups
            .iter()
            .map(|id| {
                let shard = match self.shard_for(id) {
                    Ok(shard) => shard,
                    Err(code) => {
                        return DescribedGroup::default()
                            .with_group_id(id.clone())
                            .with_authorized_operations(ops)
                            .with_error_code(code);
                    }
                };
                let described = {
                    let st = shard.state.lock();
                    st.groups
                        .get(id.as_str())
                        .filter(|g| !g.is(state::GroupState::Dead))
                        .map(offsets::describe)
                };
                let base = DescribedGroup::default()
                    .with_group_id(id.clone())
                    .with_authorized_operations(ops);
                match described {
                    // KIP-1043: v6 reports a missing group as GROUP_ID_NOT_FOUND; older
                    // versions as a Dead group without error.
                    None if v >= 6 => base
                        .with_error_code(E::GroupIdNotFound.code())
                        .with_error_message(Some(StrBytes::from_string(format!(
                            "Group {} not found.",
                            id.as_str()
                        ))))
                        .with_group_state(StrBytes::from_static_str("Dead")),
                    None => base.with_group_state(StrBytes::from_static_str("Dead")),
                    Some(d) => base
                        .with_group_state(StrBytes::from_static_str(d.state))
                        .with_protocol_type(StrBytes::from_string(d.protocol_type))
                        .with_protocol_data(StrBytes::from_string(d.protocol_data))
                        .with_members(
                            d.members
                                .into_iter()
                                .map(|m| {
                                    DescribedGroupMember::default()
                                        .with_member_id(StrBytes::from_string(m.member_id))
                                        .with_group_instance_id(
                                            m.group_instance_id.map(StrBytes::from_string),
                                        )
                                        .with_client_id(StrBytes::from_string(m.client_id))
                                        .with_client_host(StrBytes::from_string(m.client_host))
                                        .with_member_metadata(m.metadata)
                                        .with_member_assignment(m.assignment)
                                })
                                .collect(),
                        ),
                }
            })
            .collect();
        DescribeGroupsResponse::default().with_groups(groups)
    }

    fn delete_groups(&self, r: DeleteGroupsRequest) -> DeleteGroupsResponse {
        let results = r
            .groups_names
            .iter()
            .map(|id| {
                // Any id is looked up (Kafka refuses only a null one): the empty one, or one
                // too long to store, names no group (GROUP_ID_NOT_FOUND).
                let code = match self.shard_for(id) {
                    Ok(shard) => {
                        let mut st = shard.state.lock();
                        self.env(shard, self.clock.now_ms())
                            .delete_group(&mut st.groups, id)
                    }
                    Err(code) => code,
                };
                DeletableGroupResult::default()
                    .with_group_id(id.clone())
                    .with_error_code(code)
            })
            .collect();
        DeleteGroupsResponse::default().with_results(results)
    }

    /// OffsetDelete, as Kafka's `KafkaApis.handleOffsetDeleteRequest`: a partition the broker
    /// does not have (an unknown topic, or an index beyond its partitions) is answered
    /// UNKNOWN_TOPIC_OR_PARTITION and not handed to the group, whose offsets for it stay; the
    /// rest go to the group (`Env::delete_offsets`), whose
    /// error (no such group, a non-empty one) answers the whole request.
    fn offset_delete(&self, r: OffsetDeleteRequest) -> OffsetDeleteResponse {
        let group_id = r.group_id.0.to_string();
        // Each asked partition with whether the broker has it. Kafka asks its metadata, which
        // still lists a partition in an offline directory: only a partition no data directory
        // holds is unknown.
        let asked: Vec<Vec<(i32, bool)>> = r
            .topics
            .iter()
            .map(|t| {
                let mut tp = TopicPartition {
                    topic: t.name.0.to_string(),
                    partition: 0,
                };
                t.partitions
                    .iter()
                    .map(|p| {
                        tp.partition = p.partition_index;
                        let known = !matches!(self.logs.lookup(&tp), Ok(None));
                        (p.partition_index, known)
                    })
                    .collect()
            })
            .collect();
        let topics: Vec<(String, Vec<i32>)> = r
            .topics
            .iter()
            .zip(&asked)
            .map(|(t, parts)| {
                let partitions = parts.iter().filter(|p| p.1).map(|p| p.0).collect();
                (t.name.0.to_string(), partitions)
            })
            .collect();
        let result = if group_id.is_empty() || group_id.len() > MAX_GROUP_ID_BYTES {
            Err(E::InvalidGroupId.code())
        } else {
            self.shard_for(&group_id).and_then(|shard| {
                let mut st = shard.state.lock();
                self.env(shard, self.clock.now_ms()).delete_offsets(
                    &mut st.groups,
                    &group_id,
                    &topics,
                )
            })
        };
        match result {
            // The group's answer per topic entry, its codes in the order of the entry's known
            // partitions: merged back into the request's order.
            Ok(answered) => OffsetDeleteResponse::default().with_topics(
                answered
                    .into_iter()
                    .zip(asked)
                    .map(|((name, codes), parts)| {
                        let mut codes = codes.into_iter();
                        let partitions = parts
                            .into_iter()
                            .map(|(p, known)| {
                                let code = if known {
                                    codes.next().map_or(0, |(_, code)| code)
                                } else {
                                    E::UnknownTopicOrPartition.code()
                                };
                                OffsetDeleteResponsePartition::default()
                                    .with_partition_index(p)
                                    .with_error_code(code)
                            })
                            .collect();
                        OffsetDeleteResponseTopic::default()
                            .with_name(TopicName(StrBytes::from_string(name)))
                            .with_partitions(partitions)
                    })
                    .collect(),
            ),
            Err(code) => OffsetDeleteResponse::default().with_error_code(code),
        }
    }
}

/// Runs `f` on the entries of partitions the broker has (not at all when there is none) and
/// answers the others UNKNOWN_TOPIC_OR_PARTITION, the codes in the entries' order: Kafka's
/// `KafkaApis` answers those before the group coordinator sees the request, so no group-level
/// error (an unknown group, a stale generation) replaces that answer.
fn with_known_partitions(
    entries: Vec<CommitEntry>,
    f: impl FnOnce(Vec<CommitEntry>) -> Vec<i16>,
) -> Vec<i16> {
    let unknown = E::UnknownTopicOrPartition.code();
    let mut codes = vec![unknown; entries.len()];
    let mut at = Vec::with_capacity(entries.len());
    let known: Vec<CommitEntry> = entries
        .into_iter()
        .enumerate()
        .filter(|(_, (_, v))| *v != Err(unknown))
        .map(|(i, e)| {
            at.push(i);
            e
        })
        .collect();
    if known.is_empty() {
        return codes;
    }
    let answered = f(known);
    assert_eq!(answered.len(), at.len(), "one code per known partition");
    for (i, code) in at.into_iter().zip(answered) {
        codes[i] = code;
    }
    codes
}

/// A JoinGroup response for version `v`: before v7 the protocol name may not be null.
fn join_response(v: i16, o: JoinOutcome) -> JoinGroupResponse {
    let protocol_name = match o.protocol_name {
        Some(n) => Some(StrBytes::from_string(n)),
        None if v < 7 => Some(StrBytes::new()),
        None => None,
    };
    JoinGroupResponse::default()
        .with_error_code(o.error)
        .with_generation_id(o.generation_id)
        .with_protocol_type(o.protocol_type.map(StrBytes::from_string))
        .with_protocol_name(protocol_name)
        .with_leader(StrBytes::from_string(o.leader))
        .with_skip_assignment(v >= 9 && o.skip_assignment)
        .with_member_id(StrBytes::from_string(o.member_id))
        .with_members(
            o.members
                .into_iter()
                .map(|m| {
                    JoinGroupResponseMember::default()
                        .with_member_id(StrBytes::from_string(m.member_id))
                        .with_group_instance_id(m.group_instance_id.map(StrBytes::from_string))
                        .with_metadata(m.metadata)
                })
                .collect(),
        )
}

/// A failed TxnOffsetCommit verification as Kafka's group coordinator answers it
/// (`AddPartitionsToTxnManager`'s mapping, then `maybeConvertOffsetCommitError`).
/// TRANSACTION_ABORTABLE is answered from TxnOffsetCommit v4 (Kafka's
/// `txnOffsetCommitRequestVersionToTransactionSupportedOperation`), INVALID_TXN_STATE before.
fn txn_offset_commit_verification_error(e: &crate::txn::TxnError, version: i16) -> i16 {
    use crate::txn::TxnError as T;
    match e {
        T::PartitionNotInTransaction if version >= 4 => E::TransactionAbortable,
        T::PartitionNotInTransaction => E::InvalidTxnState,
        T::ProducerFenced => E::InvalidProducerEpoch,
        T::InvalidProducerIdMapping => E::InvalidProducerIdMapping,
        T::ConcurrentTransactions => E::ConcurrentTransactions,
        T::InvalidRequest(_) => E::InvalidRequest,
        // Kafka: NOT_COORDINATOR from verification → NOT_ENOUGH_REPLICAS → this.
        T::NotLoaded(_) => E::CoordinatorNotAvailable,
        _ => E::UnknownServerError,
    }
    .code()
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::state_log::java_string_hash;

    #[test]
    fn partition_for_is_kafkas_abs_hash_modulo() {
        assert_eq!(partition_for("hello", 50), 99_162_322 % 50);
        // A negative hash: "polygenelubricants".hashCode() == Integer.MIN_VALUE → 0.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(partition_for("polygenelubricants", 7), 0);
        let neg = "zzzzzzzzzz";
        let h = java_string_hash(neg);
        assert!(h < 0);
        assert_eq!(partition_for(neg, 13), h.abs() % 13);
    }

    #[test]
    fn offsets_topic_id_is_fixed() {
        assert_eq!(offsets_topic_id(), offsets_topic_id());
        assert_ne!(offsets_topic_id(), TopicId::ZERO);
    }

    #[test]
    fn supported_versions_cover_exactly_the_group_apis() {
        assert_eq!(
            GroupCoordinator::supported_versions(ApiKey::JoinGroup),
            Some((0, 9))
        );
        assert_eq!(
            GroupCoordinator::supported_versions(ApiKey::OffsetCommit),
            Some((2, 9))
        );
        assert_eq!(GroupCoordinator::supported_versions(ApiKey::Produce), None);
        for api in [
            ApiKey::JoinGroup,
            ApiKey::SyncGroup,
            ApiKey::Heartbeat,
            ApiKey::LeaveGroup,
            ApiKey::OffsetCommit,
            ApiKey::OffsetFetch,
            ApiKey::ListGroups,
            ApiKey::DescribeGroups,
            ApiKey::DeleteGroups,
            ApiKey::TxnOffsetCommit,
            ApiKey::OffsetDelete,
        ] {
            let (lo, hi) = GroupCoordinator::supported_versions(api).unwrap();
            let codec = api.valid_versions();
            assert!(
                codec.min <= lo && hi <= codec.max,
                "{api:?}: {lo}..={hi} outside the codec's range"
            );
        }
    }
}
