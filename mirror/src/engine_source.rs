//! An in-process source cluster for simulations and tests: a [`LogManager`] answered the way a
//! single Kafka broker answers the mirror's requests.
//!
//! One node (`node_id`) leads every partition; a partition's leader epoch is its latest
//! epoch-cache entry (0 while the cache is empty). Requests are answered at once (no long poll).
//!
//! | call | answer, as a Kafka broker gives it |
//! |---|---|
//! | [`metadata`](SourceCluster::metadata) | every partition of [`LogManager::partitions`] grouped by topic, `__*` topics with `internal: true`; a named topic that does not exist comes back as `SourceTopic { error: 3, partitions: [] }` |
//! | [`fetch`](SourceCluster::fetch) | READ_UNCOMMITTED (bounded by the high watermark); per partition, in this order: request to another node → 6 NOT_LEADER_OR_FOLLOWER; unknown → 3 UNKNOWN_TOPIC_OR_PARTITION (100 UNKNOWN_TOPIC_ID when asked by an id this cluster never had); `current_leader_epoch` ≥ 0 and ≠ ours → 74 FENCED_LEADER_EPOCH (older) / 75 UNKNOWN_LEADER_EPOCH (newer); then the leader's check of a follower's `last_fetched_epoch` (below); fetch offset outside [log start, LEO] → 1 OFFSET_OUT_OF_RANGE; else the records, none when an earlier partition already answered data and the first batch does not fit the bytes left (Kafka's `firstEntryIncomplete`) |
//! | [`list_offset`](SourceCluster::list_offset) | earliest → log start (epoch of that offset); latest → high watermark (the partition's leader epoch); by timestamp → the first record at or after it, `(-1, -1)` when none |
//! | [`end_offset_for_epoch`](SourceCluster::end_offset_for_epoch) | `current_leader_epoch` ≥ 0 and ≠ ours → 74 FENCED_LEADER_EPOCH (older) / 75 UNKNOWN_LEADER_EPOCH (newer); else [`LeaderEpochCache::end_offset_for`](mirrorlog_engine::epoch_cache::LeaderEpochCache::end_offset_for) with the log end offset |
//! | [`topic_configs`](SourceCluster::topic_configs) | the topic's own Kafka config pairs ([`LogConfig::is_topic_override`](mirrorlog_engine::config::LogConfig::is_topic_override): set for the topic, or differing from the broker default), i.e. its DYNAMIC_TOPIC_CONFIG entries |
//! | [`list_groups`](SourceCluster::list_groups), [`committed_offsets`](SourceCluster::committed_offsets) | an in-memory table filled by [`EngineSource::set_group_offsets`] (groups are a broker concept, not an engine one); an unknown group has no offsets |
//!
//! Partition-level failures of the whole-call methods (`list_offset`, `end_offset_for_epoch`,
//! `topic_configs`) come back as [`SourceError::Kafka`] with the code, as the wire client
//! reports them.
//!
//! ## The diverging-epoch check
//!
//! Kafka's `Partition.readRecords` for a fetch carrying `last_fetched_epoch` ≥ 0: with
//! `(e, end) = end_offset_for(last_fetched_epoch, log end)`,
//! - `(e, end)` UNDEFINED (`(-1, -1)`: the epoch is above every epoch this log knows) → 1
//!   OFFSET_OUT_OF_RANGE ("could not determine the end offset of the last fetched epoch");
//! - fetch offset below the log start → 1 OFFSET_OUT_OF_RANGE, whatever the epochs say;
//! - `e < last_fetched_epoch` or `end < fetch offset` → no records and
//!   `diverging_epoch = Some((e, end))`: the asker truncates to `end` (or to its own end of `e`)
//!   and fetches again.
//!
//! Errors carry `high_watermark = log_start_offset = -1` (Kafka's `UNKNOWN_OFFSET`), except
//! OFFSET_OUT_OF_RANGE, which fills both so the mirror can tell "below the source's log start"
//! from "past its end" without another round trip.
//!
//! ## Fault injection
//!
//! Each injection applies to the calls that follow it: [`EngineSource::fail_next_calls`] (the
//! next `n` calls of any [`SourceCluster`] method fail as a whole),
//! [`EngineSource::corrupt_next_fetch`] (one byte of the next non-empty records of a partition is
//! flipped, so its batch CRC no longer matches), [`EngineSource::set_cluster_id`] (a different
//! cluster answers) and [`EngineSource::unclean_election`] (the source loses data and moves to a
//! new leader epoch).

use crate::source::{
    CommittedOffset, ErrorCode, FetchRequest, FetchResponse, GroupListing, OffsetSpec,
    PartitionData, SourceCluster, SourceError, SourceMetadata, SourceNode, SourcePartition,
    SourceTopic,
};
use bytes::{Bytes, BytesMut};
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{FetchIsolation, OffsetLookup, PartitionLog};
use mirrorlog_engine::manager::{LogManager, PartitionHandle};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_segment::batch::RECORD_BATCH_OVERHEAD;
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

/// The Kafka error codes this source answers with (the numbers Kafka's `Errors` gives them).
pub mod codes {
    use crate::source::ErrorCode;

    /// No error.
    pub const NONE: ErrorCode = 0;
    /// `OFFSET_OUT_OF_RANGE`.
    pub const OFFSET_OUT_OF_RANGE: ErrorCode = 1;
    /// `UNKNOWN_TOPIC_OR_PARTITION`.
    pub const UNKNOWN_TOPIC_OR_PARTITION: ErrorCode = 3;
    /// `NOT_LEADER_OR_FOLLOWER`.
    pub const NOT_LEADER_OR_FOLLOWER: ErrorCode = 6;
    /// `KAFKA_STORAGE_ERROR`.
    pub const KAFKA_STORAGE_ERROR: ErrorCode = 56;
    /// `FENCED_LEADER_EPOCH`: the asker's `current_leader_epoch` is older than the leader's.
    pub const FENCED_LEADER_EPOCH: ErrorCode = 74;
    /// `UNKNOWN_LEADER_EPOCH`: the asker's `current_leader_epoch` is newer than the leader's.
    pub const UNKNOWN_LEADER_EPOCH: ErrorCode = 75;
    /// `UNKNOWN_TOPIC_ID`.
    pub const UNKNOWN_TOPIC_ID: ErrorCode = 100;
}

/// A group as [`EngineSource::set_group_offsets`] left it.
#[derive(Debug, Clone)]
struct Group {
    state: String,
    group_type: String,
    offsets: Vec<CommittedOffset>,
}

/// What the next calls will do differently.
#[derive(Debug)]
struct Faults {
    cluster_id: String,
    /// Calls left to fail, and with what.
    fail_calls: u32,
    fail_with: Option<SourceError>,
    /// Partitions whose next non-empty fetched records get a byte flipped.
    corrupt: BTreeSet<(String, i32)>,
    /// Partitions the next metadata answer reports with an old (leader, epoch).
    stale: BTreeMap<(String, i32), (i32, LeaderEpoch)>,
    groups: BTreeMap<String, Group>,
}

/// An in-process source cluster over a [`LogManager`]. See the module docs.
#[derive(Debug)]
pub struct EngineSource {
    logs: Arc<LogManager>,
    node_id: i32,
    faults: Mutex<Faults>,
}

/// The leader epoch a single-node source advertises: its latest epoch-cache entry, or 0 for a
/// log that has none yet.
fn leader_epoch(log: &PartitionLog) -> LeaderEpoch {
    log.epoch_cache().latest_epoch().unwrap_or(LeaderEpoch(0))
}

/// Kafka's leader check of a request's `current_leader_epoch` (`Partition.localLogWithEpochOrThrow`)
/// against the leader's epoch `ours`: none when it is −1 or ours, else `FENCED_LEADER_EPOCH`
/// (older) or `UNKNOWN_LEADER_EPOCH` (newer).
fn epoch_fence(current_leader_epoch: LeaderEpoch, ours: LeaderEpoch) -> Option<ErrorCode> {
    if current_leader_epoch.get() < 0 || current_leader_epoch == ours {
        None
    } else if current_leader_epoch < ours {
        Some(codes::FENCED_LEADER_EPOCH)
    } else {
        Some(codes::UNKNOWN_LEADER_EPOCH)
    }
}

fn kafka_error(code: ErrorCode, message: impl Into<String>) -> SourceError {
    SourceError::Kafka {
        code,
        message: message.into(),
    }
}

fn storage_error(e: &EngineError) -> SourceError {
    kafka_error(codes::KAFKA_STORAGE_ERROR, e.to_string())
}

impl EngineSource {
    /// A source serving `logs` as cluster `cluster_id`, whose only broker is `node_id`.
    pub fn new(logs: Arc<LogManager>, cluster_id: &str, node_id: i32) -> Arc<EngineSource> {
        Arc::new(EngineSource {
            logs,
            node_id,
            faults: Mutex::new(Faults {
                cluster_id: cluster_id.to_string(),
                fail_calls: 0,
                fail_with: None,
                corrupt: BTreeSet::new(),
                stale: BTreeMap::new(),
                groups: BTreeMap::new(),
            }),
        })
    }

    /// The logs this source serves (to produce into them, move their high watermark…).
    pub fn logs(&self) -> &Arc<LogManager> {
        &self.logs
    }

    /// The id of the node leading every partition.
    pub fn node_id(&self) -> i32 {
        self.node_id
    }

    /// The cluster id metadata reports now.
    pub fn cluster_id(&self) -> String {
        self.faults.lock().cluster_id.clone()
    }

    /// The next `n` calls of any [`SourceCluster`] method fail with `e` (a network error, a
    /// request-level Kafka error…); replaces an earlier injection. `n = 0` cancels it.
    pub fn fail_next_calls(&self, n: u32, e: SourceError) {
        let mut f = self.faults.lock();
        f.fail_calls = n;
        f.fail_with = (n > 0).then_some(e);
    }

    /// The next fetch response that carries records for `topic`-`partition` has one byte of
    /// them flipped: the first byte after the first batch's header (its first record), which
    /// the batch CRC covers, so the batch reads as corrupt. Responses without records for that
    /// partition leave the injection armed.
    pub fn corrupt_next_fetch(&self, topic: &str, partition: i32) {
        self.faults
            .lock()
            .corrupt
            .insert((topic.to_string(), partition));
    }

    /// The next metadata answer reports `topic`-`partition` led by `leader` in `epoch`: what a
    /// broker that has not yet heard of the newest leader answers (stale metadata).
    pub fn stale_metadata_next(
        &self,
        topic: &str,
        partition: i32,
        leader: i32,
        epoch: LeaderEpoch,
    ) {
        self.faults
            .lock()
            .stale
            .insert((topic.to_string(), partition), (leader, epoch));
    }

    /// From now on metadata reports cluster id `id` (a different cluster behind the same
    /// address).
    pub fn set_cluster_id(&self, id: &str) {
        self.faults.lock().cluster_id = id.to_string();
    }

    /// What an unclean leader election looks like from outside: the partition's log is
    /// truncated to `truncate_to` (batch-granular, as [`PartitionLog::truncate_to`]) and a new
    /// leader epoch starts at the new log end: one above the leader epoch before the truncation,
    /// so the new epoch is above every epoch the lost data was written in (as the controller's
    /// epochs are).
    ///
    /// # Errors
    /// Unknown partition ([`EngineError::Directory`]), or the engine's storage errors.
    pub fn unclean_election(
        &self,
        topic: &str,
        partition: i32,
        truncate_to: Offset,
    ) -> Result<(), EngineError> {
        let tp = TopicPartition {
            topic: topic.to_string(),
            partition,
        };
        let h = self.logs.get(&tp).ok_or_else(|| EngineError::Directory {
            path: PathBuf::from(tp.to_string()),
            reason: "no such partition".into(),
        })?;
        let mut log = h.write();
        let next = LeaderEpoch(leader_epoch(&log).get() + 1);
        log.truncate_to(truncate_to)?;
        log.assign_leader_epoch(next)?;
        tracing::info!(partition = %tp, epoch = %next, log_end = %log.log_end_offset(), "simulated unclean leader election");
        Ok(())
    }

    /// Sets `group`'s committed offsets and what [`SourceCluster::list_groups`] reports for it
    /// (`state`: `Stable`, `Empty`…; `group_type`: `classic`, `consumer`, `share`). The protocol
    /// type is `share` for share groups and `consumer` otherwise.
    pub fn set_group_offsets(
        &self,
        group: &str,
        offsets: Vec<CommittedOffset>,
        state: &str,
        group_type: &str,
    ) {
        self.faults.lock().groups.insert(
            group.to_string(),
            Group {
                state: state.to_string(),
                group_type: group_type.to_string(),
                offsets,
            },
        );
    }

    /// Counts the call against [`fail_next_calls`](Self::fail_next_calls).
    fn maybe_fail(&self) -> Result<(), SourceError> {
        let mut f = self.faults.lock();
        if f.fail_calls == 0 {
            return Ok(());
        }
        f.fail_calls -= 1;
        let e = f.fail_with.clone().expect("set with the count");
        if f.fail_calls == 0 {
            f.fail_with = None;
        }
        Err(e)
    }

    fn partition(&self, topic: &str, partition: i32) -> Result<Arc<PartitionHandle>, SourceError> {
        self.logs
            .get(&TopicPartition {
                topic: topic.to_string(),
                partition,
            })
            .ok_or_else(|| {
                kafka_error(
                    codes::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("UNKNOWN_TOPIC_OR_PARTITION: {topic}-{partition}"),
                )
            })
    }

    /// The partition a fetch names, by name, or by id when the request carries one.
    fn fetch_target(
        &self,
        topic: &str,
        topic_id: &[u8; 16],
        partition: i32,
    ) -> Result<Arc<PartitionHandle>, ErrorCode> {
        let found = self.logs.get(&TopicPartition {
            topic: topic.to_string(),
            partition,
        });
        if *topic_id == [0; 16] {
            return found.ok_or(codes::UNKNOWN_TOPIC_OR_PARTITION);
        }
        match found {
            Some(h) if h.topic_id() == TopicId(*topic_id) => Ok(h),
            _ if self
                .logs
                .partitions()
                .iter()
                .any(|h| h.topic_id() == TopicId(*topic_id)) =>
            {
                Err(codes::UNKNOWN_TOPIC_OR_PARTITION)
            }
            _ => Err(codes::UNKNOWN_TOPIC_ID),
        }
    }

    /// Flips a byte of `records` if an injection is armed for this partition.
    fn maybe_corrupt(&self, topic: &str, partition: i32, records: Bytes) -> Bytes {
        if records.is_empty() {
            return records;
        }
        let armed = self
            .faults
            .lock()
            .corrupt
            .remove(&(topic.to_string(), partition));
        if !armed {
            return records;
        }
        let mut b = BytesMut::from(&records[..]);
        let at = RECORD_BATCH_OVERHEAD.min(b.len() - 1);
        b[at] ^= 0xFF;
        tracing::info!(topic, partition, position = at, "corrupted fetched records");
        b.freeze()
    }
}

/// A partition answer with only an error.
fn error_data(topic: &str, partition: i32, error: ErrorCode) -> PartitionData {
    PartitionData {
        current_leader: None,
        topic: topic.to_string(),
        partition,
        error,
        high_watermark: Offset::UNKNOWN,
        log_start_offset: Offset::UNKNOWN,
        diverging_epoch: None,
        records: Bytes::new(),
    }
}

impl SourceCluster for EngineSource {
    fn metadata(&self, topics: Option<&[String]>) -> Result<SourceMetadata, SourceError> {
        self.maybe_fail()?;
        let stale = std::mem::take(&mut self.faults.lock().stale);
        let mut by_name: BTreeMap<String, SourceTopic> = BTreeMap::new();
        for h in self.logs.partitions() {
            let tp = h.topic_partition();
            let (leader, epoch) = stale
                .get(&(tp.topic.clone(), tp.partition))
                .copied()
                .unwrap_or((self.node_id, leader_epoch(&h.read())));
            let t = by_name
                .entry(tp.topic.clone())
                .or_insert_with(|| SourceTopic {
                    name: tp.topic.clone(),
                    id: h.topic_id().0,
                    internal: tp.topic.starts_with("__"),
                    partitions: vec![],
                    error: codes::NONE,
                });
            t.partitions.push(SourcePartition {
                partition: tp.partition,
                leader,
                leader_epoch: epoch,
                error: codes::NONE,
            });
        }
        for t in by_name.values_mut() {
            t.partitions.sort_by_key(|p| p.partition);
        }
        let topics = match topics {
            None => by_name.into_values().collect(),
            Some(names) => names
                .iter()
                .map(|n| {
                    by_name.get(n).cloned().unwrap_or_else(|| SourceTopic {
                        name: n.clone(),
                        id: [0; 16],
                        internal: false,
                        partitions: vec![],
                        error: codes::UNKNOWN_TOPIC_OR_PARTITION,
                    })
                })
                .collect(),
        };
        Ok(SourceMetadata {
            cluster_id: self.cluster_id(),
            nodes: vec![SourceNode {
                id: self.node_id,
                host: "localhost".into(),
                port: 0,
            }],
            topics,
        })
    }

    fn fetch(&self, node: i32, request: &FetchRequest) -> Result<FetchResponse, SourceError> {
        self.maybe_fail()?;
        // Kafka's ReplicaManager.readFromLog: the response limit shrinks as partitions fill it;
        // only the first partition with data may exceed it (one whole batch).
        let mut limit = request.max_bytes.max(0) as u32;
        let mut min_one_batch = true;
        let mut out = Vec::with_capacity(request.partitions.len());
        for p in &request.partitions {
            if node != self.node_id {
                out.push(error_data(
                    &p.topic,
                    p.partition,
                    codes::NOT_LEADER_OR_FOLLOWER,
                ));
                continue;
            }
            let h = match self.fetch_target(&p.topic, &p.topic_id, p.partition) {
                Ok(h) => h,
                Err(code) => {
                    out.push(error_data(&p.topic, p.partition, code));
                    continue;
                }
            };
            let log = h.read();
            if let Some(code) = epoch_fence(p.current_leader_epoch, leader_epoch(&log)) {
                out.push(error_data(&p.topic, p.partition, code));
                continue;
            }
            let mut data = PartitionData {
                current_leader: None,
                topic: p.topic.clone(),
                partition: p.partition,
                error: codes::NONE,
                high_watermark: log.high_watermark(),
                log_start_offset: log.log_start_offset(),
                diverging_epoch: None,
                records: Bytes::new(),
            };
            let leo = log.log_end_offset();
            let out_of_range = p.fetch_offset < log.log_start_offset() || p.fetch_offset > leo;
            if p.last_fetched_epoch.get() >= 0 {
                let (e, end) = log.epoch_cache().end_offset_for(p.last_fetched_epoch, leo);
                if e == LeaderEpoch::NONE || end == Offset::UNKNOWN {
                    data.error = codes::OFFSET_OUT_OF_RANGE;
                    out.push(data);
                    continue;
                }
                if p.fetch_offset < log.log_start_offset() {
                    data.error = codes::OFFSET_OUT_OF_RANGE;
                    out.push(data);
                    continue;
                }
                if e < p.last_fetched_epoch || end < p.fetch_offset {
                    data.diverging_epoch = Some((e, end));
                    out.push(data);
                    continue;
                }
            }
            if out_of_range {
                data.error = codes::OFFSET_OUT_OF_RANGE;
                out.push(data);
                continue;
            }
            let fetch_size = (p.max_bytes.max(0) as u32).min(limit);
            let read = log
                .read(
                    p.fetch_offset,
                    fetch_size,
                    FetchIsolation::HighWatermark,
                    min_one_batch,
                )
                .and_then(|info| match info.records {
                    // Kafka's ReplicaManager.readFromLog answers a first batch the limit cut
                    // (`firstEntryIncomplete`) with no records: the asker gets it whole from
                    // its next fetch, where it may be the first partition with data.
                    Some(d) if d.first_entry_incomplete => Ok(Bytes::new()),
                    Some(d) => d.slice.read_all().map_err(EngineError::from),
                    None => Ok(Bytes::new()),
                });
            match read {
                Ok(records) => {
                    if !records.is_empty() {
                        min_one_batch = false;
                        limit = limit.saturating_sub(records.len() as u32);
                    }
                    drop(log);
                    data.records = self.maybe_corrupt(&p.topic, p.partition, records);
                }
                Err(EngineError::OffsetOutOfRange { .. }) => {
                    data.error = codes::OFFSET_OUT_OF_RANGE;
                }
                Err(e) => {
                    tracing::warn!(topic = %p.topic, partition = p.partition, "fetch failed: {e}");
                    data = error_data(&p.topic, p.partition, codes::KAFKA_STORAGE_ERROR);
                }
            }
            out.push(data);
        }
        Ok(FetchResponse {
            error: codes::NONE,
            partitions: out,
        })
    }

    fn list_offset(
        &self,
        topic: &str,
        partition: i32,
        spec: OffsetSpec,
    ) -> Result<(Offset, LeaderEpoch), SourceError> {
        self.maybe_fail()?;
        let h = self.partition(topic, partition)?;
        let log = h.read();
        let epoch = |e: Option<LeaderEpoch>| e.unwrap_or(LeaderEpoch::NONE);
        match spec {
            OffsetSpec::Earliest => {
                let o = log.log_start_offset();
                Ok((o, epoch(log.epoch_at(o))))
            }
            // Kafka's Partition.fetchOffsetForTimestamp answers LATEST with the partition's
            // leader epoch.
            OffsetSpec::Latest => Ok((log.high_watermark(), leader_epoch(&log))),
            OffsetSpec::Timestamp(ts) => match log
                .fetch_offset(OffsetLookup::Timestamp(ts))
                .map_err(|e| storage_error(&e))?
            {
                Some((o, _, e)) => Ok((o, epoch(e))),
                None => Ok((Offset::UNKNOWN, LeaderEpoch::NONE)),
            },
        }
    }

    fn end_offset_for_epoch(
        &self,
        topic: &str,
        partition: i32,
        epoch: LeaderEpoch,
        current_leader_epoch: LeaderEpoch,
    ) -> Result<(LeaderEpoch, Offset), SourceError> {
        self.maybe_fail()?;
        let h = self.partition(topic, partition)?;
        let log = h.read();
        if let Some(code) = epoch_fence(current_leader_epoch, leader_epoch(&log)) {
            return Err(kafka_error(
                code,
                format!("{topic}-{partition}: leader epoch {current_leader_epoch} asked"),
            ));
        }
        Ok(log
            .epoch_cache()
            .end_offset_for(epoch, log.log_end_offset()))
    }

    fn topic_configs(&self, topic: &str) -> Result<Vec<(String, String)>, SourceError> {
        self.maybe_fail()?;
        let h = self
            .logs
            .partitions()
            .into_iter()
            .find(|h| h.topic_partition().topic == topic)
            .ok_or_else(|| {
                kafka_error(
                    codes::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("UNKNOWN_TOPIC_OR_PARTITION: {topic}"),
                )
            })?;
        let defaults = self.logs.default_log_config();
        let log = h.read();
        let config = log.config();
        Ok(config
            .to_kafka_pairs()
            .into_iter()
            .filter(|(k, _)| config.is_topic_override(k, defaults))
            .map(|(k, v)| (k.to_string(), v))
            .collect())
    }

    fn list_groups(&self) -> Result<Vec<GroupListing>, SourceError> {
        self.maybe_fail()?;
        Ok(self
            .faults
            .lock()
            .groups
            .iter()
            .map(|(id, g)| GroupListing {
                group_id: id.clone(),
                protocol_type: if g.group_type == "share" {
                    "share".into()
                } else {
                    "consumer".into()
                },
                state: Some(g.state.clone()),
                group_type: Some(g.group_type.clone()),
            })
            .collect())
    }

    fn committed_offsets(&self, group_id: &str) -> Result<Vec<CommittedOffset>, SourceError> {
        self.maybe_fail()?;
        Ok(self
            .faults
            .lock()
            .groups
            .get(group_id)
            .map(|g| g.offsets.clone())
            .unwrap_or_default())
    }
}
