//! One coordinator shard: a `__consumer_offsets` partition and the groups that hash to it.
//!
//! Kafka runs each offsets partition as a single-threaded state machine; here a shard's groups
//! sit behind one mutex, held across the durable append of a change, so the order of records in
//! the partition is the order in which their changes were applied in memory, and a change is
//! visible only once its record is durable. Different shards append in parallel and share
//! `fdatasync`s through the engine's group commit.
//!
//! A shard also owns its share of the upkeep [`tick`](super::GroupCoordinator::tick) drives:
//! offset expiry and the stand-in for log compaction (see [`Shard::maybe_compact`]).

use super::config::GroupConfig;
use super::records::{self, OffsetValue, RecordKey};
use super::state::{CommittedOffset, Group, GroupState};
use anyhow::Context;
use bytes::Bytes;
use kafka_protocol::ResponseError as E;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin};
use mirrorlog_engine::manager::PartitionHandle;
use mirrorlog_engine::producer_state::ProducerStateError;
use mirrorlog_index::{
    ErrorChain, LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs,
    TopicPartition,
};
use mirrorlog_segment::batch::Batches;
use mirrorlog_segment::{BatchBuilder, ControlRecordType, RecordBatch};
use parking_lot::Mutex;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// A record to append: key and value (`None`: a tombstone).
pub type KeyValue = (Bytes, Option<Bytes>);

/// The most record bytes one compaction batch carries.
const COMPACTION_BATCH_BYTES: usize = 1 << 20;

/// Why a change could not be stored.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A record could not be encoded (a string too long for its length field).
    #[error(transparent)]
    Encode(#[from] records::RecordError),
    /// The append failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl StoreError {
    /// The error code an offset commit gets (Kafka's `OffsetMetadataManager` mapping of append
    /// errors): storage trouble is retriable (COORDINATOR_NOT_AVAILABLE), an oversized batch is
    /// INVALID_COMMIT_OFFSET_SIZE, a fenced producer INVALID_PRODUCER_EPOCH.
    pub fn offset_commit_code(&self) -> i16 {
        match self {
            StoreError::Encode(_) => E::InvalidCommitOffsetSize.code(),
            StoreError::Engine(e) => match e {
                EngineError::RecordTooLarge { .. } | EngineError::RecordBatchTooLarge { .. } => {
                    E::InvalidCommitOffsetSize.code()
                }
                EngineError::ProducerState(ProducerStateError::InvalidProducerEpoch { .. }) => {
                    E::InvalidProducerEpoch.code()
                }
                EngineError::ProducerState(_) => E::InvalidTxnState.code(),
                _ => E::CoordinatorNotAvailable.code(),
            },
        }
    }

    /// The error code a group metadata write gets (Kafka's
    /// `appendGroupMetadataErrorToResponseError`): storage trouble is COORDINATOR_NOT_AVAILABLE,
    /// anything else UNKNOWN_SERVER_ERROR.
    pub fn group_code(&self) -> i16 {
        match self {
            StoreError::Engine(
                EngineError::RecordTooLarge { .. }
                | EngineError::RecordBatchTooLarge { .. }
                | EngineError::ProducerState(_),
            )
            | StoreError::Encode(_) => E::UnknownServerError.code(),
            StoreError::Engine(_) => E::CoordinatorNotAvailable.code(),
        }
    }
}

/// Told the number of the `__consumer_offsets` partition a shard changed (records appended, or
/// the log start moved), once the change is in the log: the broker wakes the long polls on that
/// partition. See [`GroupCoordinator::set_write_hook`](super::GroupCoordinator::set_write_hook).
pub type WriteHook = Box<dyn Fn(i32) + Send + Sync>;

/// The hook every shard of a coordinator shares; set once, after the shards exist.
pub type SharedWriteHook = Arc<std::sync::OnceLock<WriteHook>>;

/// The groups of one shard.
#[derive(Debug, Default)]
pub struct ShardState {
    /// Every group (Dead groups are removed at once).
    pub groups: HashMap<String, Group>,
    /// The groups each producer id staged transactional offsets in, so that a transaction's end
    /// visits only those (a hint: a group may since have dropped them).
    pub txn_groups: HashMap<i64, HashSet<String>>,
}

impl ShardState {
    /// Notes that `producer_id` staged offsets in `group`.
    pub fn note_staged(&mut self, producer_id: i64, group: &str) {
        let groups = self.txn_groups.entry(producer_id).or_default();
        if !groups.contains(group) {
            groups.insert(group.to_string());
        }
    }

    /// Ends `producer_id`'s transaction in this shard: its staged offsets become committed
    /// (or are dropped). Returns how many were applied.
    pub fn complete_txn(&mut self, producer_id: i64, commit: bool) -> usize {
        let Some(ids) = self.txn_groups.remove(&producer_id) else {
            return 0;
        };
        let mut applied = 0;
        for id in &ids {
            if let Some(g) = self.groups.get_mut(id) {
                applied += g.complete_txn(producer_id, commit);
            }
        }
        applied
    }

    /// Records that make up the live state: one per group (its metadata) plus one per committed
    /// offset.
    pub fn live_records(&self) -> i64 {
        self.groups
            .values()
            .map(|g| 1 + g.offsets.len() as i64)
            .sum()
    }
}

/// What loading a shard found.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadStats {
    /// Records replayed.
    pub records: u64,
    /// Records skipped because they did not parse.
    pub skipped: u64,
}

/// One `__consumer_offsets` partition and its groups.
pub struct Shard {
    /// The partition number.
    pub partition: i32,
    /// The partition's log.
    pub handle: Arc<PartitionHandle>,
    /// Its groups.
    pub state: Mutex<ShardState>,
    /// Records from the log start to its end (the compaction trigger compares it with the live
    /// state). Changed under `state`'s lock.
    records_in_log: AtomicI64,
    /// `records_in_log` below this: no need to look at compaction (spares the per-tick scan of
    /// the groups).
    compaction_check_at: AtomicI64,
    /// Told after every change to the partition, whoever made it (a request, the tick, a
    /// mirror's group commit).
    written: SharedWriteHook,
}

impl std::fmt::Debug for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shard")
            .field("partition", &self.partition)
            .field("records_in_log", &self.records_in_log)
            .finish_non_exhaustive()
    }
}

impl Shard {
    /// A shard over `handle`, not loaded yet; `written` is told of each change it makes.
    pub fn new(partition: i32, handle: Arc<PartitionHandle>, written: SharedWriteHook) -> Shard {
        Shard {
            partition,
            handle,
            state: Mutex::new(ShardState::default()),
            records_in_log: AtomicI64::new(0),
            compaction_check_at: AtomicI64::new(0),
            written,
        }
    }

    /// Tells the write hook that the partition changed.
    fn changed(&self) {
        if let Some(hook) = self.written.get() {
            hook(self.partition);
        }
    }

    /// Appends `records` as one batch (a transactional one of `txn`'s producer when given),
    /// durable on return, moves the high watermark to the log end and tells the write hook (the
    /// long polls on the partition wake). Returns the offset of the first record; the others
    /// follow it. The caller holds the shard's lock.
    ///
    /// # Errors
    /// The engine's append errors (nothing was applied).
    pub fn append(
        &self,
        records: &[KeyValue],
        txn: Option<(i64, i16)>,
        now_ms: i64,
    ) -> Result<i64, EngineError> {
        assert!(!records.is_empty(), "appending no record");
        let mut b = BatchBuilder::new();
        if let Some((pid, epoch)) = txn {
            // As Kafka's coordinator writes transactional offset commits: the producer's id and
            // epoch, sequence 0; sequences are not checked for coordinator appends.
            b = b
                .producer(ProducerId(pid), ProducerEpoch(epoch), Sequence(0))
                .transactional(true);
        }
        for (k, v) in records {
            b.append(TimestampMs(now_ms), Some(k), v.as_deref(), &[]);
        }
        let batch = b.build();
        let epoch = self
            .handle
            .read()
            .epoch_cache()
            .latest_epoch()
            .unwrap_or(LeaderEpoch(0));
        let info = self.handle.append_as_leader_durable(
            batch.into_bytes(),
            epoch,
            LeaderOrigin::Coordinator,
        )?;
        assert_eq!(
            info.last_offset.get() - info.first_offset.get() + 1,
            records.len() as i64,
            "one offset per record"
        );
        self.handle
            .write()
            .maybe_increment_high_watermark(info.last_offset.next());
        self.records_in_log
            .fetch_add(records.len() as i64, Ordering::Relaxed);
        self.changed();
        Ok(info.first_offset.get())
    }

    /// Stores a group's metadata (with `assignments` instead of the members' own when given).
    ///
    /// # Errors
    /// As [`append`](Self::append), or a field too long to encode.
    pub fn store_group(
        &self,
        g: &mut Group,
        assignments: Option<&HashMap<String, Bytes>>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let key = records::group_key(&g.group_id)?;
        let value = records::group_value(&g.to_value(assignments))?;
        self.append(&[(key, Some(value.clone()))], None, now_ms)?;
        g.stored_value = Some(value);
        Ok(())
    }

    /// Replays the partition from its log start: later records win, tombstones delete,
    /// transactional offsets wait for their producer's marker. Sets the high watermark to the
    /// log end (every record there was written durably by this coordinator).
    ///
    /// # Errors
    /// A read failure or a corrupt batch (the engine validates batches on recovery, so this
    /// means the files changed underneath).
    pub fn load(
        &self,
        st: &mut ShardState,
        config: &GroupConfig,
        now_ms: i64,
    ) -> anyhow::Result<LoadStats> {
        let (start, end) = {
            let log = self.handle.read();
            (log.log_start_offset(), log.log_end_offset())
        };
        let mut stats = LoadStats::default();
        let mut next = start;
        while next < end {
            let data = self
                .handle
                .read()
                .read(
                    next,
                    config.offsets_load_buffer_bytes as u32,
                    FetchIsolation::LogEnd,
                    true,
                )
                .with_context(|| {
                    format!("reading __consumer_offsets-{} at {next}", self.partition)
                })?;
            let Some(fd) = data.records else { break };
            let bytes = fd.slice.read_all()?;
            let before = next;
            // Any magic, as Kafka's loader: a partition carried over from an older Kafka holds
            // legacy entries, whose records have keys and values as v2 ones.
            for batch in Batches::new(bytes).legacy(true) {
                let batch = batch.with_context(|| {
                    format!("a corrupt batch in __consumer_offsets-{}", self.partition)
                })?;
                if batch.last_offset() < next {
                    continue;
                }
                self.replay_batch(st, &batch, start, now_ms, &mut stats)?;
                next = batch.next_offset();
            }
            anyhow::ensure!(
                next > before,
                "__consumer_offsets-{}: no complete batch at offset {next}",
                self.partition
            );
        }
        self.handle.write().maybe_increment_high_watermark(end);
        self.records_in_log
            .store(stats.records as i64, Ordering::Relaxed);
        Ok(stats)
    }

    fn replay_batch(
        &self,
        st: &mut ShardState,
        batch: &RecordBatch,
        log_start: Offset,
        now_ms: i64,
        stats: &mut LoadStats,
    ) -> anyhow::Result<()> {
        if batch.is_control() {
            if let Some(c) = batch.control_record()? {
                let commit = match c.kind {
                    ControlRecordType::Commit => true,
                    ControlRecordType::Abort => false,
                    _ => return Ok(()),
                };
                st.complete_txn(batch.producer_id().get(), commit);
            }
            return Ok(());
        }
        let txn_pid = batch.is_transactional().then(|| batch.producer_id().get());
        for r in batch.records()? {
            let r = r?;
            if r.offset < log_start {
                continue;
            }
            stats.records += 1;
            let Some(key) = r.key.as_deref() else {
                stats.skipped += 1;
                tracing::warn!(partition = self.partition, offset = %r.offset, "record without a key skipped");
                continue;
            };
            let key = match records::decode_key(key) {
                Ok(k) => k,
                Err(e) => {
                    stats.skipped += 1;
                    tracing::warn!(partition = self.partition, offset = %r.offset, "undecodable key skipped: {e}");
                    continue;
                }
            };
            match key {
                RecordKey::Offset {
                    group,
                    topic,
                    partition,
                } => {
                    let tp = TopicPartition { topic, partition };
                    let Some(v) = r.value.as_deref() else {
                        if let Some(g) = st.groups.get_mut(&group) {
                            g.delete_offset(&tp);
                        }
                        continue;
                    };
                    let value = match records::decode_offset_value(v) {
                        Ok(v) => v,
                        Err(e) => {
                            stats.skipped += 1;
                            tracing::warn!(partition = self.partition, offset = %r.offset, "undecodable offset skipped: {e}");
                            continue;
                        }
                    };
                    let group_id = group.clone();
                    let g = st
                        .groups
                        .entry(group.clone())
                        .or_insert_with(|| Group::new(group, GroupState::Empty, now_ms));
                    let c = CommittedOffset {
                        value,
                        record_offset: r.offset.get(),
                    };
                    match txn_pid {
                        Some(pid) => {
                            g.pending_txn.entry(pid).or_default().insert(tp, c);
                            st.note_staged(pid, &group_id);
                        }
                        None => {
                            g.offsets.insert(tp, c);
                        }
                    }
                }
                RecordKey::GroupMetadata { group } => {
                    let old = st.groups.remove(&group);
                    let mut new = match r.value.as_deref() {
                        None => None,
                        Some(bytes) => match records::decode_group_value(bytes) {
                            Ok(v) => {
                                let mut g = Group::from_value(group.clone(), &v, now_ms);
                                // A copy: a slice would pin the whole read buffer.
                                g.stored_value = Some(Bytes::copy_from_slice(bytes));
                                Some(g)
                            }
                            Err(e) => {
                                stats.skipped += 1;
                                tracing::warn!(partition = self.partition, offset = %r.offset, "undecodable group metadata skipped: {e}");
                                old.as_ref()
                                    .map(|_| Group::new(group.clone(), GroupState::Empty, now_ms))
                            }
                        },
                    };
                    // Offsets outlive a group record (Kafka keeps them apart); a deletion writes
                    // their tombstones before the group's.
                    if let Some(old) = old
                        && (!old.offsets.is_empty() || !old.pending_txn.is_empty())
                    {
                        let g = new.get_or_insert_with(|| {
                            Group::new(group.clone(), GroupState::Empty, now_ms)
                        });
                        g.offsets = old.offsets;
                        g.pending_txn = old.pending_txn;
                    }
                    if let Some(g) = new {
                        st.groups.insert(group, g);
                    }
                }
                RecordKey::Other(kind) => {
                    tracing::debug!(
                        partition = self.partition,
                        kind,
                        "record of another group type skipped"
                    );
                }
            }
        }
        Ok(())
    }

    /// Expires offsets as Kafka's `cleanupGroupMetadata` does, then removes groups left Empty
    /// with nothing committed (writing their tombstones). Offsets with a staged transactional
    /// commit are kept. Errors are logged: the next check retries.
    pub fn expire_offsets(&self, config: &GroupConfig, now_ms: i64) {
        let mut st = self.state.lock();
        let retention_ms = config.offsets_retention_ms();
        let mut plan: Vec<(String, Vec<TopicPartition>, bool)> = Vec::new();
        for g in st.groups.values() {
            if g.is(GroupState::Dead) {
                continue;
            }
            let expired = expired_offsets(g, retention_ms, now_ms);
            let drop_group = g.is(GroupState::Empty)
                && g.pending_txn.is_empty()
                && g.pending_join.is_empty()
                && expired.len() == g.offsets.len();
            if !expired.is_empty() || drop_group {
                plan.push((g.group_id.clone(), expired, drop_group));
            }
        }
        if plan.is_empty() {
            return;
        }
        plan.sort();
        let mut recs = Vec::new();
        for (group, tps, drop_group) in &plan {
            for tp in tps {
                match records::offset_key(group, &tp.topic, tp.partition) {
                    Ok(k) => recs.push((k, None)),
                    Err(e) => tracing::warn!(group, "cannot write an offset tombstone: {e}"),
                }
            }
            if *drop_group {
                match records::group_key(group) {
                    Ok(k) => recs.push((k, None)),
                    Err(e) => tracing::warn!(group, "cannot write a group tombstone: {e}"),
                }
            }
        }
        if !recs.is_empty()
            && let Err(e) = self.append(&recs, None, now_ms)
        {
            tracing::warn!(
                partition = self.partition,
                "offset expiry failed, retrying later: {}",
                ErrorChain(&e)
            );
            return;
        }
        let (mut offsets, mut groups) = (0, 0);
        for (group, tps, drop_group) in plan {
            let Some(g) = st.groups.get_mut(&group) else {
                continue;
            };
            for tp in &tps {
                g.delete_offset(tp);
            }
            offsets += tps.len();
            if drop_group {
                g.transition_to(GroupState::Dead, now_ms);
                st.groups.remove(&group);
                groups += 1;
            }
        }
        tracing::info!(
            partition = self.partition,
            offsets,
            groups,
            "expired offsets and removed dead groups"
        );
    }

    /// mirrorlog's stand-in for compacting `__consumer_offsets` (the engine has no log cleaner):
    /// when the partition holds `offsets_compaction_min_dirty_records` more records than the live
    /// state, the live state (every group's metadata, every committed offset) is appended again
    /// and the log start moves to its first record, so that older segments can go. Skipped while
    /// a transaction is open in the partition. A crash before the log start moves (or before it
    /// is checkpointed) replays the old records and then the snapshot: the same state.
    pub fn maybe_compact(&self, config: &GroupConfig, now_ms: i64) {
        let min_dirty = config.offsets_compaction_min_dirty_records;
        if self.records_in_log.load(Ordering::Relaxed)
            < self.compaction_check_at.load(Ordering::Relaxed)
        {
            return;
        }
        let mut st = self.state.lock();
        let live = st.live_records();
        let in_log = self.records_in_log.load(Ordering::Relaxed);
        if in_log - live < min_dirty {
            self.compaction_check_at
                .store(live.saturating_add(min_dirty), Ordering::Relaxed);
            return;
        }
        let txn_open = st.groups.values().any(|g| !g.pending_txn.is_empty()) || {
            let log = self.handle.read();
            log.last_stable_offset() < log.high_watermark()
        };
        if txn_open {
            // Look again after some more records.
            self.compaction_check_at
                .store(in_log.saturating_add(min_dirty / 10), Ordering::Relaxed);
            return;
        }
        let mut ids: Vec<&String> = st.groups.keys().collect();
        ids.sort();
        // One entry per record: (group, the partition for an offset record), for the offsets'
        // new record positions.
        let mut recs: Vec<KeyValue> = Vec::with_capacity(live as usize);
        let mut owners: Vec<(String, Option<TopicPartition>)> = Vec::with_capacity(live as usize);
        for id in ids {
            let g = &st.groups[id];
            // The group as last stored (not a state in the middle of a rebalance). A group never
            // stored (made by offset commits alone, perhaps now in its first rebalance) gets no
            // group record, as in Kafka's log: its offsets alone bring it back, empty — never
            // as a generation whose assignment SyncGroup has not stored yet.
            if let Some(v) = &g.stored_value {
                match records::group_key(id) {
                    Ok(k) => recs.push((k, Some(v.clone()))),
                    Err(e) => {
                        tracing::warn!(group = %id, "compaction skipped: {e}");
                        return;
                    }
                }
                owners.push((id.clone(), None));
            }
            let tps: BTreeSet<&TopicPartition> = g.offsets.keys().collect();
            for tp in tps {
                let c = &g.offsets[tp];
                match records::offset_key(id, &tp.topic, tp.partition)
                    .and_then(|k| Ok((k, records::offset_value(&c.value)?)))
                {
                    Ok((k, v)) => recs.push((k, Some(v))),
                    Err(e) => {
                        tracing::warn!(group = %id, "compaction skipped: {e}");
                        return;
                    }
                }
                owners.push((id.clone(), Some(tp.clone())));
            }
        }
        let mut first = None;
        let mut i = 0;
        while i < recs.len() {
            let mut j = i;
            let mut bytes = 0;
            while j < recs.len() && (j == i || bytes < COMPACTION_BATCH_BYTES) {
                bytes += recs[j].0.len() + recs[j].1.as_ref().map_or(0, Bytes::len);
                j += 1;
            }
            match self.append(&recs[i..j], None, now_ms) {
                Ok(base) => {
                    first.get_or_insert(base);
                    for (n, (group, tp)) in owners[i..j].iter().enumerate() {
                        if let Some(tp) = tp
                            && let Some(c) =
                                st.groups.get_mut(group).and_then(|g| g.offsets.get_mut(tp))
                        {
                            c.record_offset = base + n as i64;
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(
                        partition = self.partition,
                        "compaction append failed: {}",
                        ErrorChain(&e)
                    );
                    return;
                }
            }
            i = j;
        }
        // Nothing live (every group deleted or expired): every record below the high watermark
        // can go.
        let first = first.unwrap_or_else(|| self.handle.read().high_watermark().get());
        let kept = recs.len() as i64;
        match self
            .handle
            .write()
            .maybe_increment_log_start_offset(Offset(first))
        {
            Ok(_) => {
                self.changed();
                self.records_in_log.store(kept, Ordering::Relaxed);
                self.compaction_check_at
                    .store(kept.saturating_add(min_dirty), Ordering::Relaxed);
                tracing::info!(
                    partition = self.partition,
                    dropped = in_log,
                    kept,
                    log_start = first,
                    "compacted __consumer_offsets partition"
                );
            }
            Err(e) => tracing::warn!(
                partition = self.partition,
                "compaction could not move the log start: {}",
                ErrorChain(&e)
            ),
        }
    }

    /// Records from the log start to its end, as counted by this shard.
    pub fn records_in_log(&self) -> i64 {
        self.records_in_log.load(Ordering::Relaxed)
    }
}

/// Kafka's `offsetExpirationCondition` and `isOffsetExpired` for one group: the partitions whose
/// committed offsets expired at `now_ms`.
fn expired_offsets(g: &Group, retention_ms: i64, now_ms: i64) -> Vec<TopicPartition> {
    // The base timestamp retention counts from, per offset; None: the offset never expires.
    let subscribed = g.subscribed_topics();
    let base = |tp: &TopicPartition, v: &OffsetValue| -> Option<i64> {
        match &g.protocol_type {
            None => Some(v.commit_timestamp_ms),
            Some(_) if g.is(GroupState::Empty) => {
                Some(g.state_timestamp_ms.unwrap_or(v.commit_timestamp_ms))
            }
            Some(_) if g.is(GroupState::Stable) => match &subscribed {
                Some(topics) if !topics.contains(&tp.topic) => Some(v.commit_timestamp_ms),
                _ => None,
            },
            Some(_) => None,
        }
    };
    let mut out: Vec<TopicPartition> = g
        .offsets
        .iter()
        .filter(|(tp, c)| {
            if g.has_pending_txn_offset(tp) {
                return false;
            }
            let Some(base) = base(tp, &c.value) else {
                return false;
            };
            match c.value.expire_timestamp_ms {
                Some(at) => now_ms >= at,
                None => now_ms.saturating_sub(base) >= retention_ms,
            }
        })
        .map(|(tp, _)| tp.clone())
        .collect();
    out.sort();
    out
}
