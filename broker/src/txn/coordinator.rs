//! The coordinator itself: state in memory behind one lock per transactional id, every change
//! written durably to `__transaction_state` before it takes effect, markers written
//! synchronously through the engine.

use super::TxnOffsetsSink;
use super::config::TxnConfig;
use super::error::TxnError;
use super::state::{TxnMetadata, TxnState, is_epoch_exhausted};
use super::state_log::{
    self, BrokerState, OFFSETS_TOPIC, StateRecord, TRANSACTION_STATE_TOPIC, partition_for,
};
use anyhow::Context;
use bytes::Bytes;
use mirrorlog_engine::clock::Clock;
use mirrorlog_engine::config::{CompressionConfig, LogConfig};
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin};
use mirrorlog_engine::manager::{LogManager, PartitionHandle};
use mirrorlog_index::{
    CoordinatorEpoch, ErrorChain, LeaderEpoch, ProducerEpoch, ProducerId, TimestampMs, TopicId,
    TopicPartition,
};
use mirrorlog_segment::{BatchBuilder, Batches, TimestampType};
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

/// One transactional id's state behind its own lock: requests for different ids run in
/// parallel; requests for one id run one at a time, durable writes included.
type Entry = Arc<Mutex<TxnMetadata>>;

/// Bytes read per step while loading `__transaction_state`.
const LOAD_READ_BYTES: u32 = 1 << 20;
/// The longest transactional id: its `__transaction_state` key stores it as a Kafka string
/// (int16 length). A longer one (legal on the wire from InitProducerId v2) is refused with
/// `INVALID_REQUEST`.
pub const MAX_TRANSACTIONAL_ID_BYTES: usize = i16::MAX as usize;
/// At most this many threads write one transaction's markers.
const MARKER_THREADS: usize = 8;
/// Lookups of a transactional id retried when it was expiring under us.
const DEAD_ENTRY_RETRIES: usize = 3;
/// A transaction whose completion (markers, then the Complete record) failed is retried by
/// `tick` this long after the first failure, then after twice as long at each further failure,
/// up to [`COMPLETION_RETRY_BACKOFF_MAX_MS`]: 0.1, 0.2, 0.4, ... 6.4, 10, 10 s. The failures
/// retried here (a partition's data directory offline, a partition whose write failed) mostly
/// last until a restart, which retries at once; retrying every tick only repeated the failure.
const COMPLETION_RETRY_BACKOFF_MS: i64 = 100;
/// The longest wait between two retries of one transaction's completion: a failure that clears
/// without a restart delays the transaction's end by at most this much.
const COMPLETION_RETRY_BACKOFF_MAX_MS: i64 = 10_000;

/// The transaction coordinator. See the [module docs](super).
pub struct TxnCoordinator {
    logs: Arc<LogManager>,
    offsets: Arc<dyn TxnOffsetsSink>,
    clock: Arc<dyn Clock>,
    config: TxnConfig,
    state_partitions: i32,
    /// The `__transaction_state` partitions this incarnation did not load, with why: their data
    /// directory was offline at open. Their transactional ids are answered NOT_COORDINATOR
    /// (FindCoordinator: COORDINATOR_NOT_AVAILABLE), as Kafka answers for a partition it does
    /// not lead, and nothing reads or writes their state until a restart loads them. When
    /// partition 0 (the coordinator epoch and the producer-id blocks) is one of them, every
    /// partition is: see [`open`](Self::open).
    unloaded: BTreeMap<i32, String>,
    coordinator_epoch: CoordinatorEpoch,
    txns: RwLock<HashMap<String, Entry>>,
    producer_ids: Mutex<ProducerIdBlock>,
    /// Transactional ids left in PrepareCommit/PrepareAbort because a marker or the completion
    /// record could not be written, with the partitions whose marker is already written and
    /// when to retry; `tick` retries the rest.
    pending: Mutex<HashMap<String, Pending>>,
    schedule: Mutex<Schedule>,
    /// Serialises state-log rewrites.
    rewrite: Mutex<()>,
    /// Told each partition a marker was written to (the broker wakes its long polls).
    marker_written: std::sync::OnceLock<MarkerHook>,
    /// Told each `__transaction_state` partition written to (the broker wakes its long polls).
    state_written: std::sync::OnceLock<StateHook>,
}

/// See [`TxnCoordinator::set_marker_hook`].
pub type MarkerHook = Box<dyn Fn(&TopicPartition) + Send + Sync>;

/// See [`TxnCoordinator::set_state_hook`].
pub type StateHook = Box<dyn Fn(i32) + Send + Sync>;

/// The producer ids this incarnation may hand out: `next .. end`; `end` is durable.
#[derive(Debug)]
struct ProducerIdBlock {
    next: i64,
    end: i64,
}

/// A transaction whose completion failed (or, at open, was interrupted).
#[derive(Debug, Default)]
struct Pending {
    /// The partitions whose marker is written.
    done: BTreeSet<TopicPartition>,
    /// Failed attempts since the transaction was prepared or loaded.
    failures: u32,
    /// When (the coordinator's clock) `tick` next retries; 0 at open: at once.
    next_retry_ms: i64,
    /// The failure last warned about: the same failure again is logged at debug level only.
    warned: Option<String>,
}

/// How long `tick` waits before the retry that follows the `failures`th failure.
fn completion_retry_backoff_ms(failures: u32) -> i64 {
    let doublings = failures.saturating_sub(1).min(20);
    COMPLETION_RETRY_BACKOFF_MS
        .saturating_mul(1 << doublings)
        .min(COMPLETION_RETRY_BACKOFF_MAX_MS)
}

/// When `tick`'s periodic jobs are next due.
#[derive(Debug)]
struct Schedule {
    next_abort_check_ms: i64,
    next_expire_check_ms: i64,
}

impl fmt::Debug for TxnCoordinator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TxnCoordinator")
            .field("state_partitions", &self.state_partitions)
            .field("coordinator_epoch", &self.coordinator_epoch)
            .field("transactional_ids", &self.txns.read().len())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn state_tp(partition: i32) -> TopicPartition {
    TopicPartition {
        topic: TRANSACTION_STATE_TOPIC.to_string(),
        partition,
    }
}

/// The epoch to stamp on a leader append: the partition's latest (0 for a new log).
fn leader_epoch(h: &PartitionHandle) -> LeaderEpoch {
    h.read()
        .epoch_cache()
        .latest_epoch()
        .unwrap_or(LeaderEpoch(0))
}

/// One node: whatever is appended is replicated, so the high watermark follows the log end.
fn advance_high_watermark(h: &PartitionHandle) {
    let mut log = h.write();
    let leo = log.log_end_offset();
    log.maybe_increment_high_watermark(leo);
}

/// `__transaction_state`'s topic config: the broker defaults, never deleted by retention
/// (mirrorlog has no compaction; the coordinator rewrites live records instead), no timestamp
/// bounds (the records carry the coordinator's clock), no re-compression.
fn state_log_config(defaults: &LogConfig, config: &TxnConfig) -> LogConfig {
    let mut c = defaults.clone();
    c.segment.segment_bytes_max = config.transaction_state_segment_bytes;
    c.retention_ms = -1;
    c.retention_bytes = -1;
    c.timestamp_type = TimestampType::CreateTime;
    c.timestamp_before_max_ms = i64::MAX;
    c.timestamp_after_max_ms = i64::MAX;
    c.compression = CompressionConfig::Producer;
    c.read_only = false;
    c
}

/// What loading `__transaction_state` found.
#[derive(Debug, Default)]
struct Loaded {
    txns: HashMap<String, TxnMetadata>,
    broker: Option<BrokerState>,
    records: u64,
}

impl TxnCoordinator {
    /// Opens the coordinator: creates `__transaction_state` if it is missing (with
    /// `config.transaction_state_partitions` partitions; an existing topic keeps its count),
    /// loads every partition, takes the next coordinator epoch and persists it, then completes
    /// every transaction that was PrepareCommit or PrepareAbort when the last incarnation
    /// stopped — its markers are written again (a second marker for a completed transaction is
    /// harmless), `offsets.complete_txn` is called again, and CompleteCommit / CompleteAbort is
    /// written. Ongoing transactions stay open and time out as usual.
    ///
    /// The coordinator starts no thread: call [`tick`](Self::tick) periodically. Since
    /// completing a transaction may call `offsets.complete_txn`, the group coordinator must be
    /// loaded before this is called.
    ///
    /// A partition whose data directory is offline (it went offline while the log manager
    /// loaded) is neither loaded nor created anew elsewhere: its transactional ids are
    /// unavailable (NOT_COORDINATOR; their open transactions stay open, their timeouts wait)
    /// until a restart with the directory repaired loads it as it was. The others are served.
    /// Partition 0 is special: it holds the coordinator epoch and the producer-id blocks, and
    /// without them no marker could be stamped above the last incarnation's nor any producer id
    /// handed out without risking one already in use; when it is offline the whole coordinator
    /// is unavailable (every transactional id NOT_COORDINATOR, InitProducerId without one
    /// COORDINATOR_LOAD_IN_PROGRESS) and nothing is read or written.
    ///
    /// # Errors
    /// An invalid config, a `__transaction_state` partition that cannot be created, read or
    /// written (other than one of an offline directory), or a record in it that cannot be
    /// decoded.
    pub fn open(
        logs: Arc<LogManager>,
        offsets: Arc<dyn TxnOffsetsSink>,
        clock: Arc<dyn Clock>,
        config: TxnConfig,
    ) -> anyhow::Result<Arc<TxnCoordinator>> {
        config
            .validate()
            .map_err(anyhow::Error::msg)
            .context("invalid transaction coordinator config")?;
        let handles = ensure_state_partitions(&logs, &config)?;
        let state_partitions = handles.len() as i32;
        let mut unloaded: BTreeMap<i32, String> = handles
            .iter()
            .enumerate()
            .filter_map(|(p, h)| h.as_ref().err().map(|e| (p as i32, e.clone())))
            .collect();
        if let Some(why) = unloaded.get(&0).cloned() {
            let why = format!(
                "{} (the coordinator epoch and the producer-id blocks) is offline: {why}",
                state_tp(0)
            );
            unloaded = (0..state_partitions).map(|p| (p, why.clone())).collect();
        }
        let mut loaded = Loaded::default();
        for (p, h) in handles.iter().enumerate() {
            let p = p as i32;
            if let Some(why) = unloaded.get(&p) {
                tracing::error!(
                    "{} is not loaded, its transactional ids are unavailable until a restart \
                     loads it: {why}",
                    state_tp(p)
                );
                continue;
            }
            let h = h.as_ref().expect("a loaded partition is online");
            load_partition(h, p, state_partitions, &mut loaded)
                .with_context(|| format!("loading {}", state_tp(p)))?;
        }
        let coordinator_epoch = match loaded.broker {
            Some(b) => b
                .coordinator_epoch
                .checked_add(1)
                .context("coordinator epoch overflow")?,
            None => 0,
        };
        let block_end = loaded.broker.map_or(0, |b| b.producer_id_block_end);
        let now = clock.now_ms();
        let prepared: Vec<String> = loaded
            .txns
            .iter()
            .filter(|(_, m)| m.state.is_prepared())
            .map(|(id, _)| id.clone())
            .collect();
        let coordinator = TxnCoordinator {
            txns: RwLock::new(
                loaded
                    .txns
                    .into_iter()
                    .map(|(id, m)| (id, Arc::new(Mutex::new(m))))
                    .collect(),
            ),
            logs,
            offsets,
            clock,
            state_partitions,
            unloaded,
            coordinator_epoch: CoordinatorEpoch(coordinator_epoch),
            producer_ids: Mutex::new(ProducerIdBlock {
                next: block_end,
                end: block_end,
            }),
            pending: Mutex::new(
                prepared
                    .iter()
                    .map(|id| (id.clone(), Pending::default()))
                    .collect(),
            ),
            schedule: Mutex::new(Schedule {
                next_abort_check_ms: now,
                next_expire_check_ms: now,
            }),
            rewrite: Mutex::new(()),
            marker_written: std::sync::OnceLock::new(),
            state_written: std::sync::OnceLock::new(),
            config,
        };
        if !coordinator.unloaded.contains_key(&0) {
            coordinator
                .append_state(0, coordinator.broker_batch(block_end), true)
                .context("persisting the coordinator epoch")?;
        }
        tracing::info!(
            state_partitions,
            coordinator_epoch,
            transactional_ids = coordinator.txns.read().len(),
            records = loaded.records,
            completing = prepared.len(),
            "transaction coordinator loaded"
        );
        coordinator.retry_pending(now);
        Ok(Arc::new(coordinator))
    }

    /// The coordinator epoch stamped on every marker this incarnation writes (one more than the
    /// previous incarnation's).
    pub fn coordinator_epoch(&self) -> i32 {
        self.coordinator_epoch.get()
    }

    /// The number of `__transaction_state` partitions in use.
    pub fn state_partitions(&self) -> i32 {
        self.state_partitions
    }

    /// The `__transaction_state` partition holding `transactional_id`.
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        partition_for(transactional_id, self.state_partitions)
    }

    /// The `__transaction_state` partitions not loaded (their data directory was offline at
    /// open), with why; see [`open`](Self::open).
    pub fn unloaded_partitions(&self) -> BTreeMap<i32, String> {
        self.unloaded.clone()
    }

    /// Whether this coordinator serves `transactional_id`: its `__transaction_state` partition
    /// is loaded. FindCoordinator answers COORDINATOR_NOT_AVAILABLE for an id it does not serve,
    /// as Kafka does for a coordinator partition without a leader.
    pub fn serves(&self, transactional_id: &str) -> bool {
        !self
            .unloaded
            .contains_key(&self.partition_for(transactional_id))
    }

    /// A copy of a transactional id's state, `None` when unknown.
    pub fn transaction(&self, transactional_id: &str) -> Option<TxnMetadata> {
        let e = self.entry(transactional_id)?;
        let m = e.lock().clone();
        (m.state != TxnState::Dead).then_some(m)
    }

    /// A copy of every transactional id's state but those expiring (Dead), sorted by id
    /// (ListTransactions).
    pub fn transactions(&self) -> Vec<(String, TxnMetadata)> {
        let mut all: Vec<(String, TxnMetadata)> = self
            .snapshot()
            .into_iter()
            .map(|(id, e)| (id, e.lock().clone()))
            .filter(|(_, m)| m.state != TxnState::Dead)
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// The coordinator's clock, in milliseconds.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Allocates a producer id, unique across restarts: ids come from blocks whose end is
    /// written durably to `__transaction_state` before the first id of the block is handed
    /// out, and a new incarnation starts after the last block written.
    ///
    /// # Errors
    /// The block record could not be written, or the ids are exhausted.
    pub fn allocate_producer_id(&self) -> anyhow::Result<i64> {
        Ok(self.allocate()?.get())
    }

    fn allocate(&self) -> Result<ProducerId, TxnError> {
        if let Some(why) = self.unloaded.get(&0) {
            return Err(TxnError::ProducerIdsNotLoaded(why.clone()));
        }
        let mut b = self.producer_ids.lock();
        if b.next >= b.end {
            let end = b
                .next
                .checked_add(self.config.producer_id_block_size)
                .ok_or_else(|| TxnError::ProducerIdUnavailable("producer ids exhausted".into()))?;
            self.append_state(0, self.broker_batch(end), true)
                .map_err(|e| TxnError::ProducerIdUnavailable(e.to_string()))?;
            b.end = end;
        }
        let id = b.next;
        b.next += 1;
        Ok(ProducerId(id))
    }

    /// InitProducerId. Without a transactional id (an idempotent producer): a fresh producer
    /// id at epoch 0. With one: the next epoch of its producer id (a new producer id once the
    /// epoch is exhausted), fencing every older incarnation; an open transaction of the
    /// previous incarnation is aborted first (epoch bumped, ABORT markers written). Kafka
    /// answers that case CONCURRENT_TRANSACTIONS and lets the producer retry; since markers are
    /// written synchronously here, the retry is done in place and the answer is what the retry
    /// would get. `expected` is KIP-360's current producer id and epoch (InitProducerId v3+).
    ///
    /// # Errors
    /// `InvalidRequest`, `InvalidTransactionTimeout`, `ProducerFenced`,
    /// `ConcurrentTransactions` (markers of the previous transaction are still pending),
    /// `StateLogWrite`, `ProducerIdUnavailable`.
    pub fn init_producer_id(
        &self,
        transactional_id: Option<&str>,
        txn_timeout_ms: i32,
        expected: Option<(ProducerId, ProducerEpoch)>,
    ) -> Result<(ProducerId, ProducerEpoch), TxnError> {
        let Some(id) = transactional_id else {
            return Ok((self.allocate()?, ProducerEpoch(0)));
        };
        if id.is_empty() {
            return Err(TxnError::InvalidRequest("the transactional id is empty"));
        }
        if id.len() > MAX_TRANSACTIONAL_ID_BYTES {
            // Its `__transaction_state` key stores it with an int16 length.
            return Err(TxnError::InvalidRequest(
                "the transactional id is longer than 32767 bytes",
            ));
        }
        if txn_timeout_ms <= 0 || txn_timeout_ms > self.config.transaction_max_timeout_ms {
            return Err(TxnError::InvalidTransactionTimeout {
                timeout_ms: txn_timeout_ms,
                max_ms: self.config.transaction_max_timeout_ms,
            });
        }
        let create = || {
            Ok(TxnMetadata::new(
                self.allocate()?,
                txn_timeout_ms,
                self.clock.now_ms(),
            ))
        };
        self.with_txn(id, Some(&create), |m| {
            // At most twice: an open transaction is aborted, then the epoch is bumped.
            for _ in 0..2 {
                if let Some(e) = expected
                    && !m.accepts_expected(e)
                {
                    return Err(TxnError::ProducerFenced);
                }
                match m.state {
                    TxnState::PrepareCommit | TxnState::PrepareAbort => {
                        return Err(TxnError::ConcurrentTransactions);
                    }
                    TxnState::Ongoing => {
                        tracing::info!(
                            transactional_id = id,
                            producer_id = %m.producer_id,
                            epoch = %m.producer_epoch,
                            "a new producer incarnation fences the open transaction: aborting it"
                        );
                        self.fence_and_abort(id, m)?;
                    }
                    TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                        let now = self.clock.now_ms();
                        let next = if is_epoch_exhausted(m.producer_epoch)
                            && expected.is_none_or(|e| e.1 == m.producer_epoch)
                        {
                            m.prepare_rotation(
                                self.allocate()?,
                                txn_timeout_ms,
                                now,
                                expected.is_some(),
                            )
                        } else {
                            m.prepare_increment_epoch(txn_timeout_ms, expected.map(|e| e.1), now)?
                        };
                        self.persist(id, Some(&next))?;
                        *m = next;
                        tracing::debug!(
                            transactional_id = id,
                            producer_id = %m.producer_id,
                            epoch = %m.producer_epoch,
                            "initialized"
                        );
                        return Ok((m.producer_id, m.producer_epoch));
                    }
                    TxnState::Dead | TxnState::PrepareEpochFence => {
                        unreachable!("{} is never held in memory", m.state.name())
                    }
                }
            }
            Err(TxnError::ConcurrentTransactions)
        })
    }

    /// AddPartitionsToTxn: the partitions join the producer's transaction (opening one when
    /// none is). Whether the partitions exist is the caller's check (the wire handler answers
    /// UNKNOWN_TOPIC_OR_PARTITION for them without calling this; a partition of an offline data
    /// directory exists).
    ///
    /// # Errors
    /// `InvalidRequest`, `InvalidProducerIdMapping`, `ProducerFenced`,
    /// `ConcurrentTransactions`, `StateLogWrite`.
    pub fn add_partitions(
        &self,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        partitions: &[TopicPartition],
    ) -> Result<(), TxnError> {
        if transactional_id.is_empty() {
            return Err(TxnError::InvalidRequest("the transactional id is empty"));
        }
        self.with_txn(transactional_id, None, |m| {
            check_producer(m, producer_id, producer_epoch)?;
            if m.state.is_prepared() {
                return Err(TxnError::ConcurrentTransactions);
            }
            if m.state == TxnState::Ongoing && partitions.iter().all(|tp| m.partitions.contains(tp))
            {
                return Ok(());
            }
            let next = m.prepare_add_partitions(partitions.iter().cloned(), self.clock.now_ms());
            self.persist(transactional_id, Some(&next))?;
            *m = next;
            Ok(())
        })
    }

    /// AddOffsetsToTxn: the group's `__consumer_offsets` partition joins the transaction, so
    /// that EndTxn writes its marker there and tells the group coordinator
    /// ([`TxnOffsetsSink::complete_txn`]).
    ///
    /// # Errors
    /// As [`add_partitions`](Self::add_partitions).
    pub fn add_offsets(
        &self,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        group_id: &str,
    ) -> Result<(), TxnError> {
        let tp = TopicPartition {
            topic: OFFSETS_TOPIC.to_string(),
            partition: self.offsets.partition_for(group_id),
        };
        self.add_partitions(transactional_id, producer_id, producer_epoch, &[tp])
    }

    /// AddPartitionsToTxn v4+ with `verify_only` (KIP-890 part 1, asked by a partition leader
    /// before it appends a transactional batch): the partitions that are *not* in the
    /// producer's open transaction.
    ///
    /// # Errors
    /// `InvalidRequest`, `InvalidProducerIdMapping`, `ProducerFenced`,
    /// `ConcurrentTransactions`.
    pub fn verify_partitions(
        &self,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        partitions: &[TopicPartition],
    ) -> Result<Vec<TopicPartition>, TxnError> {
        self.with_open_txn(transactional_id, producer_id, producer_epoch, |m| {
            Ok(partitions
                .iter()
                .filter(|tp| !m.partitions.contains(tp))
                .cloned()
                .collect())
        })
    }

    /// Runs `f` on the locked state of `transactional_id` once Kafka's verification checks
    /// passed: a non-empty id, the producer's current id and epoch, no markers being written.
    fn with_open_txn<R>(
        &self,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        f: impl FnOnce(&TxnMetadata) -> Result<R, TxnError>,
    ) -> Result<R, TxnError> {
        if transactional_id.is_empty() {
            return Err(TxnError::InvalidRequest("the transactional id is empty"));
        }
        self.with_txn(transactional_id, None, |m| {
            check_producer(m, producer_id, producer_epoch)?;
            if m.state.is_prepared() {
                return Err(TxnError::ConcurrentTransactions);
            }
            f(m)
        })
    }

    /// Runs `write` — a transactional write to `tp` on the producer's behalf (a Produce batch,
    /// or a TxnOffsetCommit staging offsets in the group's `__consumer_offsets` partition) —
    /// only if `tp` is in the producer's open transaction (KIP-890 part 1, Kafka's checks of
    /// AddPartitionsToTxn `verify_only`), and while the transaction cannot end: `write` runs
    /// under the transaction's lock, which EndTxn, timeouts and fencing also take before they
    /// write markers. So the write either lands inside the transaction, before its marker, or
    /// is refused; it can never open a transaction nobody will end (Kafka closes the same race
    /// with a verification guard the marker clears).
    ///
    /// # Errors
    /// `InvalidRequest` (empty transactional id), `InvalidProducerIdMapping`, `ProducerFenced`,
    /// `ConcurrentTransactions` (the markers of the previous transaction are being written),
    /// `PartitionNotInTransaction`.
    pub fn run_verified<R>(
        &self,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        tp: &TopicPartition,
        write: impl FnOnce() -> R,
    ) -> Result<R, TxnError> {
        self.with_open_txn(transactional_id, producer_id, producer_epoch, |m| {
            if !m.partitions.contains(tp) {
                return Err(TxnError::PartitionNotInTransaction);
            }
            Ok(write())
        })
    }

    /// EndTxn: PrepareCommit / PrepareAbort is written durably, then the COMMIT / ABORT marker
    /// to every partition of the transaction (the groups' `__consumer_offsets` partitions
    /// included), then [`TxnOffsetsSink::complete_txn`] when offsets were added, then
    /// CompleteCommit / CompleteAbort. Once the Prepare record is durable the outcome is
    /// decided and the answer is success: markers that cannot be written yet are retried by
    /// [`tick`](Self::tick), and the producer's next request gets CONCURRENT_TRANSACTIONS until
    /// they are. A retried EndTxn of a completed transaction succeeds again.
    ///
    /// # Errors
    /// `InvalidRequest`, `InvalidProducerIdMapping`, `ProducerFenced`,
    /// `ConcurrentTransactions`, `InvalidTxnState`, `StateLogWrite`.
    pub fn end_txn(
        &self,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        commit: bool,
    ) -> Result<(), TxnError> {
        if transactional_id.is_empty() {
            return Err(TxnError::InvalidRequest("the transactional id is empty"));
        }
        let what = if commit { "commit" } else { "abort" };
        self.with_txn(transactional_id, None, |m| {
            check_producer(m, producer_id, producer_epoch)?;
            match (m.state, commit) {
                (TxnState::Ongoing, _) => {
                    let next = m.prepare_abort_or_commit(commit, self.clock.now_ms());
                    self.persist(transactional_id, Some(&next))?;
                    *m = next;
                    self.complete_or_defer(transactional_id, m);
                    Ok(())
                }
                (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => Ok(()),
                (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                    Err(TxnError::ConcurrentTransactions)
                }
                (state, _) => Err(TxnError::InvalidTxnState(format!(
                    "cannot {what} transaction of {transactional_id} in state {}",
                    state.name()
                ))),
            }
        })
    }

    /// Background work, to be called every 100 ms – 1 s: retries completions whose markers
    /// could not be written, each with its exponential backoff (0.1 s doubling up to 10 s,
    /// `COMPLETION_RETRY_BACKOFF_MS`); every `abort_timed_out_transaction_cleanup_interval_ms`,
    /// aborts transactions open longer than their timeout (the epoch is bumped, so the producer is
    /// fenced, and ABORT markers are written); every
    /// `remove_expired_transaction_cleanup_interval_ms`, forgets transactional ids idle for
    /// `transactional_id_expiration_ms` (a tombstone is written); and rewrites a
    /// `__transaction_state` partition that has grown well beyond its live records. Errors
    /// are logged; the work is retried on a later tick.
    ///
    /// Returns whether it may have written markers (a retried completion or a timeout abort
    /// was attempted), so the caller can wake fetches waiting on a last stable offset.
    pub fn tick(&self) -> bool {
        let now = self.clock.now_ms();
        let mut wrote = self.retry_pending(now);
        let (abort_due, expire_due) = {
            let mut s = self.schedule.lock();
            let abort_due = now >= s.next_abort_check_ms;
            if abort_due {
                s.next_abort_check_ms =
                    now.saturating_add(self.config.abort_timed_out_transaction_cleanup_interval_ms);
            }
            let expire_due = now >= s.next_expire_check_ms;
            if expire_due {
                s.next_expire_check_ms =
                    now.saturating_add(self.config.remove_expired_transaction_cleanup_interval_ms);
            }
            (abort_due, expire_due)
        };
        if abort_due {
            wrote |= self.abort_timed_out(now);
        }
        if expire_due {
            self.expire_idle(now);
        }
        if let Err(e) = self.maybe_rewrite_state_log() {
            tracing::warn!(
                "rewriting {TRANSACTION_STATE_TOPIC} failed, will retry: {}",
                ErrorChain(&e)
            );
        }
        wrote
    }

    // ---- internals -------------------------------------------------------------------------

    /// Whether the broker hosts `tp`, and if so whether it is a read-only mirror partition.
    pub(super) fn hosted_read_only(&self, tp: &TopicPartition) -> Option<bool> {
        self.logs.get(tp).map(|h| h.read().is_read_only())
    }

    /// Whether `tp` is in an offline data directory (its log unreadable, or never loaded).
    pub(super) fn offline(&self, tp: &TopicPartition) -> bool {
        self.logs.lookup(tp).is_err()
    }

    fn entry(&self, id: &str) -> Option<Entry> {
        self.txns.read().get(id).cloned()
    }

    fn snapshot(&self) -> Vec<(String, Entry)> {
        self.txns
            .read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Runs `f` on the locked state of `id`, creating it with `create` when it is unknown
    /// (else `InvalidProducerIdMapping`). An entry found Dead was expiring under us: it is
    /// gone from the map by the time its lock is free, so the lookup is retried. An id whose
    /// partition is not loaded is `NotLoaded` (its state is not known here, so it is neither
    /// looked up nor created).
    fn with_txn<R>(
        &self,
        id: &str,
        create: Option<&dyn Fn() -> Result<TxnMetadata, TxnError>>,
        f: impl FnOnce(&mut TxnMetadata) -> Result<R, TxnError>,
    ) -> Result<R, TxnError> {
        if let Some(why) = self.unloaded.get(&self.partition_for(id)) {
            return Err(TxnError::NotLoaded(why.clone()));
        }
        for _ in 0..DEAD_ENTRY_RETRIES {
            let entry = match (self.entry(id), create) {
                (Some(e), _) => e,
                (None, None) => return Err(TxnError::InvalidProducerIdMapping),
                (None, Some(make)) => {
                    let m = make()?;
                    self.txns
                        .write()
                        .entry(id.to_string())
                        .or_insert_with(|| Arc::new(Mutex::new(m)))
                        .clone()
                }
            };
            let mut m = entry.lock();
            if m.state == TxnState::Dead {
                continue;
            }
            return f(&mut m);
        }
        Err(TxnError::ConcurrentTransactions)
    }

    /// Writes `id`'s state (or its tombstone) durably.
    fn persist(&self, id: &str, m: Option<&TxnMetadata>) -> Result<(), TxnError> {
        let batch = state_log::txn_record_batch(id, m, self.clock.now_ms());
        self.append_state(self.partition_for(id), batch, true)
            .map_err(|e| TxnError::state_log_write(&e))
    }

    fn broker_batch(&self, block_end: i64) -> Bytes {
        let value = state_log::encode_broker_value(&BrokerState {
            producer_id_block_end: block_end,
            coordinator_epoch: self.coordinator_epoch.get(),
        });
        state_log::record_batch(
            &state_log::encode_broker_key(),
            Some(&value),
            self.clock.now_ms(),
        )
    }

    fn append_state(&self, partition: i32, batch: Bytes, durable: bool) -> Result<(), EngineError> {
        let tp = state_tp(partition);
        let h = self.logs.get(&tp).ok_or_else(|| EngineError::Directory {
            path: tp.to_string().into(),
            reason: "the transaction state partition is missing".into(),
        })?;
        let epoch = leader_epoch(&h);
        if durable {
            h.append_as_leader_durable(batch, epoch, LeaderOrigin::Client)?;
        } else {
            h.write()
                .append_as_leader(batch, epoch, LeaderOrigin::Client)?;
        }
        advance_high_watermark(&h);
        self.state_changed(partition);
        Ok(())
    }

    /// Tells the state hook that `partition`'s log moved.
    fn state_changed(&self, partition: i32) {
        if let Some(hook) = self.state_written.get() {
            hook(partition);
        }
    }

    /// Aborts the open transaction of `m` with a bumped epoch. Fails only when PrepareAbort
    /// could not be written; a failed completion is left to `tick`.
    fn fence_and_abort(&self, id: &str, m: &mut TxnMetadata) -> Result<(), TxnError> {
        let next = m.prepare_fenced_abort(self.clock.now_ms());
        self.persist(id, Some(&next))?;
        *m = next;
        self.complete_or_defer(id, m);
        Ok(())
    }

    /// Completes a prepared transaction, or leaves it for `tick` to retry after a backoff
    /// ([`COMPLETION_RETRY_BACKOFF_MS`]). A failure is warned about once, and again only when
    /// its reason changes; the same failure repeated is logged at debug level.
    fn complete_or_defer(&self, id: &str, m: &mut TxnMetadata) {
        let mut p = self.pending.lock().remove(id).unwrap_or_default();
        match self.complete(id, m, &mut p.done) {
            Ok(()) if p.failures > 0 => tracing::info!(
                transactional_id = id,
                failures = p.failures,
                "transaction completed after failed attempts"
            ),
            Ok(()) => {}
            Err(e) => {
                p.failures = p.failures.saturating_add(1);
                let backoff_ms = completion_retry_backoff_ms(p.failures);
                p.next_retry_ms = self.clock.now_ms().saturating_add(backoff_ms);
                let reason = ErrorChain(&e).to_string();
                if p.warned.as_ref() == Some(&reason) {
                    tracing::debug!(
                        transactional_id = id,
                        failures = p.failures,
                        "completing the transaction failed again, will retry in {backoff_ms} ms: \
                         {}",
                        ErrorChain(&e)
                    );
                } else {
                    tracing::warn!(
                        transactional_id = id,
                        failures = p.failures,
                        "completing the transaction failed, will retry in {backoff_ms} ms (then \
                         less often, up to {COMPLETION_RETRY_BACKOFF_MAX_MS} ms apart; the same \
                         failure again is logged at debug level): {}",
                        ErrorChain(&e)
                    );
                    p.warned = Some(reason);
                }
                self.pending.lock().insert(id.to_string(), p);
            }
        }
    }

    /// Markers (to the partitions not in `done`, which collects those written), the group
    /// coordinator, then CompleteCommit / CompleteAbort.
    fn complete(
        &self,
        id: &str,
        m: &mut TxnMetadata,
        done: &mut BTreeSet<TopicPartition>,
    ) -> Result<(), TxnError> {
        assert!(m.state.is_prepared(), "no markers pending for {id}");
        let commit = m.state == TxnState::PrepareCommit;
        self.write_markers(m, commit, done)?;
        let offsets_partitions: Vec<i32> = m
            .partitions
            .iter()
            .filter(|tp| tp.topic == OFFSETS_TOPIC)
            .map(|tp| tp.partition)
            .collect();
        if !offsets_partitions.is_empty() {
            self.offsets.complete_txn(
                m.producer_id.get(),
                m.producer_epoch.get(),
                commit,
                &offsets_partitions,
            );
        }
        let next = m.prepare_complete(self.clock.now_ms());
        self.persist(id, Some(&next))?;
        tracing::debug!(
            transactional_id = id,
            producer_id = %m.producer_id,
            epoch = %m.producer_epoch,
            partitions = m.partitions.len(),
            "transaction {}",
            if commit { "committed" } else { "aborted" }
        );
        *m = next;
        Ok(())
    }

    /// Calls `hook` with each partition a marker is written to, once it is in the log (from
    /// EndTxn, an InitProducerId or a timeout that aborts, or `tick`'s retries): the broker
    /// wakes the long polls on those partitions alone. Set once; later calls are ignored.
    pub fn set_marker_hook(&self, hook: MarkerHook) {
        let _ = self.marker_written.set(hook);
    }

    /// Calls `hook` with each `__transaction_state` partition whose log end or log start moved,
    /// once the change is in the log: a request's state write (the transactional id's
    /// partition, and partition 0 for a new producer-id block), a timer's (a timeout abort, an
    /// expiry, a retried completion) and a rewrite. The broker wakes the long polls on that
    /// partition alone, as Kafka's append completes the delayed fetches of its partition. Set
    /// once; later calls are ignored.
    pub fn set_state_hook(&self, hook: StateHook) {
        let _ = self.state_written.set(hook);
    }

    /// Writes the marker to every partition of the transaction not in `done`, several
    /// partitions at a time; those written join `done`.
    fn write_markers(
        &self,
        m: &TxnMetadata,
        commit: bool,
        done: &mut BTreeSet<TopicPartition>,
    ) -> Result<(), TxnError> {
        let now = self.clock.now_ms();
        let tps: Vec<&TopicPartition> = m
            .partitions
            .iter()
            .filter(|tp| !done.contains(*tp))
            .collect();
        let write = |tp: &&TopicPartition| {
            (
                (*tp).clone(),
                self.write_marker(tp, m.producer_id, m.producer_epoch, commit, now),
            )
        };
        let results: Vec<(TopicPartition, Result<(), String>)> = if tps.len() <= 1 {
            tps.iter().map(write).collect()
        } else {
            let write = &write;
            let per_thread = tps.len().div_ceil(MARKER_THREADS);
            std::thread::scope(|s| {
                let workers: Vec<_> = tps
                    .chunks(per_thread)
                    .map(|chunk| s.spawn(move || chunk.iter().map(write).collect::<Vec<_>>()))
                    .collect();
                workers
                    .into_iter()
                    .flat_map(|w| w.join().expect("a marker writer panicked"))
                    .collect()
            })
        };
        let mut failures = vec![];
        for (tp, r) in results {
            match r {
                Ok(()) => {
                    done.insert(tp);
                }
                Err(e) => failures.push(e),
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(TxnError::Internal(format!(
                "markers not written: {}",
                failures.join("; ")
            )))
        }
    }

    /// One marker, durable on return. A partition that is gone, or is a read-only mirror, is
    /// skipped (Kafka drops markers for deleted partitions; a mirror's offsets must stay the
    /// source's). A marker the engine refuses for its producer or coordinator epoch is skipped
    /// too (Kafka drops it): a newer epoch owns that producer id there. A partition in an
    /// offline data directory is not gone: its marker fails and is retried (Kafka's marker
    /// waits for a partition without a leader), or the partition would come back with the
    /// transaction open and nobody to end it.
    fn write_marker(
        &self,
        tp: &TopicPartition,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        commit: bool,
        now: i64,
    ) -> Result<(), String> {
        let h = match self.logs.lookup(tp) {
            Ok(Some(h)) => h,
            Ok(None) => {
                tracing::warn!(partition = %tp, "partition is gone: transaction marker skipped");
                return Ok(());
            }
            Err(e) => return Err(format!("{tp}: {}", ErrorChain(&e))),
        };
        if h.read().is_read_only() {
            tracing::warn!(partition = %tp, "partition is a read-only mirror: transaction marker skipped");
            return Ok(());
        }
        let batch = BatchBuilder::end_txn_marker(
            producer_id,
            producer_epoch,
            commit,
            self.coordinator_epoch.get(),
            TimestampMs(now),
        )
        .build()
        .into_bytes();
        match h.append_as_leader_durable(batch, leader_epoch(&h), LeaderOrigin::TxnMarker) {
            Ok(_) => {
                advance_high_watermark(&h);
                if let Some(hook) = self.marker_written.get() {
                    hook(tp);
                }
                Ok(())
            }
            Err(EngineError::ProducerState(e)) => {
                tracing::warn!(partition = %tp, "transaction marker refused, skipped: {e}");
                Ok(())
            }
            Err(EngineError::ReadOnly(_)) => {
                // Became a mirror partition after the check above (a mirror started).
                tracing::warn!(partition = %tp, "partition is a read-only mirror: transaction marker skipped");
                Ok(())
            }
            Err(e) => Err(format!("{tp}: {}", ErrorChain(&e))),
        }
    }

    /// WriteTxnMarkers for one partition (what the Java AdminClient's `abortTransaction` sends
    /// to a partition's leader to end a hanging transaction; Kafka's coordinators send it to
    /// their brokers): a marker for `producer_id` at `producer_epoch`, stamped with the
    /// caller's `coordinator_epoch`, durable on return, as Kafka's
    /// `handleWriteTxnMarkersRequest` appends it with the coordinator's origin. On a
    /// `__consumer_offsets` partition the producer's offsets staged there are then completed
    /// (Kafka's `onTransactionCompleted`). Returns the error code: UNKNOWN_TOPIC_OR_PARTITION
    /// for a partition this broker does not have, else the engine's refusal (a stale producer
    /// or coordinator epoch, an offline directory); READ_ONLY_TOPIC for a mirror partition.
    pub fn write_requested_marker(
        &self,
        tp: &TopicPartition,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        commit: bool,
        coordinator_epoch: i32,
    ) -> i16 {
        let Some(h) = self.logs.get(tp) else {
            return kafka_protocol::ResponseError::UnknownTopicOrPartition.code();
        };
        // A mirror partition refuses the marker (`LeaderOrigin::TxnMarker`) with READ_ONLY_TOPIC:
        // it holds the source's batches at the source's offsets, and a marker of ours would take
        // an offset the source's next batch needs; its transactions end with the source's
        // markers, or with the ABORTs of its stop.
        let batch = BatchBuilder::end_txn_marker(
            producer_id,
            producer_epoch,
            commit,
            coordinator_epoch,
            TimestampMs(self.clock.now_ms()),
        )
        .build()
        .into_bytes();
        match h.append_as_leader_durable(batch, leader_epoch(&h), LeaderOrigin::TxnMarker) {
            Ok(_) => {
                advance_high_watermark(&h);
                if let Some(hook) = self.marker_written.get() {
                    hook(tp);
                }
                if tp.topic == OFFSETS_TOPIC {
                    self.offsets.complete_txn(
                        producer_id.get(),
                        producer_epoch.get(),
                        commit,
                        &[tp.partition],
                    );
                }
                tracing::info!(partition = %tp, producer_id = producer_id.get(), commit, "requested transaction marker written");
                0
            }
            Err(e) => crate::errors::engine_error_code(&e),
        }
    }

    /// Retries the completions due at `now`. Returns whether one was attempted (markers may
    /// have been written).
    fn retry_pending(&self, now: i64) -> bool {
        let mut attempted = false;
        let ids: Vec<String> = self
            .pending
            .lock()
            .iter()
            .filter(|(_, p)| p.next_retry_ms <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            let Some(e) = self.entry(&id) else {
                self.pending.lock().remove(&id);
                continue;
            };
            let mut m = e.lock();
            if m.state.is_prepared() {
                attempted = true;
                self.complete_or_defer(&id, &mut m);
            } else {
                self.pending.lock().remove(&id);
            }
        }
        attempted
    }

    /// Kafka's `abortTimedOutTransactions`: open past `txnStartTimestamp + timeout`. An id busy
    /// with a request is looked at next time.
    /// Returns whether an abort was attempted (markers may have been written).
    fn abort_timed_out(&self, now: i64) -> bool {
        let mut attempted = false;
        for (id, e) in self.snapshot() {
            let Some(mut m) = e.try_lock() else { continue };
            if m.state == TxnState::Ongoing
                && m.txn_start_timestamp_ms
                    .saturating_add(i64::from(m.txn_timeout_ms))
                    < now
            {
                tracing::info!(
                    transactional_id = id,
                    producer_id = %m.producer_id,
                    epoch = %m.producer_epoch,
                    timeout_ms = m.txn_timeout_ms,
                    "transaction timed out: aborting it"
                );
                attempted = true;
                if let Err(err) = self.fence_and_abort(&id, &mut m) {
                    tracing::warn!(
                        transactional_id = id,
                        "timeout abort failed, will retry: {}",
                        ErrorChain(&err)
                    );
                }
            }
        }
        attempted
    }

    /// Kafka's `removeExpiredTransactionalIds`.
    fn expire_idle(&self, now: i64) {
        let expiration = self.config.transactional_id_expiration_ms;
        for (id, e) in self.snapshot() {
            let Some(mut m) = e.try_lock() else { continue };
            if !m.state.is_expiration_allowed()
                || m.txn_last_update_timestamp_ms.saturating_add(expiration) > now
            {
                continue;
            }
            match self.persist(&id, None) {
                Ok(()) => {
                    *m = m.prepare_dead();
                    let mut map = self.txns.write();
                    if map.get(&id).is_some_and(|x| Arc::ptr_eq(x, &e)) {
                        map.remove(&id);
                    }
                    tracing::info!(transactional_id = id, "transactional id expired");
                }
                Err(err) => {
                    tracing::warn!(
                        transactional_id = id,
                        "expiring failed, will retry: {}",
                        ErrorChain(&err)
                    )
                }
            }
        }
    }

    /// mirrorlog's stand-in for compaction: a partition with more than
    /// `state_log_rewrite_min_records` records past its log start and more than twice its
    /// live records gets every live record appended again, flushed, and its log start raised
    /// to the first of them. A crash before the log start moves leaves old and new records,
    /// and the newer win on load.
    fn maybe_rewrite_state_log(&self) -> Result<(), TxnError> {
        let Some(_guard) = self.rewrite.try_lock() else {
            return Ok(());
        };
        let storage = |e: EngineError| TxnError::state_log_write(&e);
        for p in 0..self.state_partitions {
            if self.unloaded.contains_key(&p) {
                // Nothing of it is in memory: a rewrite would drop its live records.
                continue;
            }
            let tp = state_tp(p);
            let h = self.logs.get(&tp).ok_or_else(|| TxnError::StateLogWrite {
                append_error: kafka_protocol::ResponseError::UnknownTopicOrPartition,
                reason: format!("{tp} is missing"),
            })?;
            let (start, end) = {
                let log = h.read();
                (log.log_start_offset(), log.log_end_offset())
            };
            let records = end.get() - start.get();
            if records <= self.config.state_log_rewrite_min_records {
                continue;
            }
            // The new start is read before the live set is listed: an id created later has
            // its first record after it.
            let new_start = h.read().log_end_offset();
            let live: Vec<(String, Entry)> = self
                .snapshot()
                .into_iter()
                .filter(|(id, _)| self.partition_for(id) == p)
                .collect();
            let live_records = live.len() as i64 + i64::from(p == 0);
            if records <= 2 * live_records {
                continue;
            }
            let now = self.clock.now_ms();
            if p == 0 {
                let b = self.producer_ids.lock();
                self.append_state(0, self.broker_batch(b.end), false)
                    .map_err(storage)?;
            }
            for (id, e) in &live {
                let m = e.lock();
                if m.state == TxnState::Dead {
                    continue;
                }
                self.append_state(p, state_log::txn_record_batch(id, Some(&m), now), false)
                    .map_err(storage)?;
            }
            let mut log = h.write();
            log.flush().map_err(storage)?;
            let leo = log.log_end_offset();
            log.maybe_increment_high_watermark(leo);
            log.maybe_increment_log_start_offset(new_start)
                .map_err(storage)?;
            drop(log);
            self.state_changed(p);
            tracing::info!(
                partition = %tp,
                live = live.len(),
                dropped = new_start.get() - start.get(),
                "transaction state partition rewritten"
            );
        }
        Ok(())
    }
}

/// The producer id and epoch of a request must be the transactional id's current ones.
fn check_producer(
    m: &TxnMetadata,
    producer_id: ProducerId,
    producer_epoch: ProducerEpoch,
) -> Result<(), TxnError> {
    if m.producer_id != producer_id {
        Err(TxnError::InvalidProducerIdMapping)
    } else if m.producer_epoch != producer_epoch {
        Err(TxnError::ProducerFenced)
    } else {
        Ok(())
    }
}

/// The `__transaction_state` partitions, created when missing; a partition of a data directory
/// that went offline while loading is `Err` with why (never created anew elsewhere: that would
/// forget its transactional ids, and the next start would find two copies). Such partitions
/// count for the partition count, which decides every id's partition.
fn ensure_state_partitions(
    logs: &LogManager,
    config: &TxnConfig,
) -> anyhow::Result<Vec<Result<Arc<PartitionHandle>, String>>> {
    let existing: Vec<Arc<PartitionHandle>> = logs
        .partitions()
        .into_iter()
        .filter(|h| h.topic_partition().topic == TRANSACTION_STATE_TOPIC)
        .collect();
    let offline: Vec<i32> = logs
        .offline_partitions()
        .into_iter()
        .filter(|(tp, _)| tp.topic == TRANSACTION_STATE_TOPIC)
        .map(|(tp, _)| tp.partition)
        .collect();
    let max = existing
        .iter()
        .map(|h| h.topic_partition().partition)
        .chain(offline.iter().copied())
        .max();
    let count = match max {
        None => config.transaction_state_partitions,
        Some(max) => {
            let count = max + 1;
            if count != config.transaction_state_partitions {
                tracing::warn!(
                    existing = count,
                    configured = config.transaction_state_partitions,
                    "{TRANSACTION_STATE_TOPIC} keeps its partition count: changing it would move \
                     transactional ids to other partitions"
                );
            }
            count
        }
    };
    // Without an online partition to take the topic id from, a missing partition cannot join
    // the offline ones' topic: it is left out too (partition 0 is then missing or offline, and
    // the coordinator unavailable as a whole).
    let topic_id = match existing.first() {
        Some(h) => Some(h.topic_id()),
        None if offline.is_empty() => Some(TopicId(*uuid::Uuid::new_v4().as_bytes())),
        None => None,
    };
    // Created already pinned: `keep_every_record` below then writes only the partitions an
    // older build created unpinned.
    let log_config = state_log_config(logs.default_log_config(), config)
        .keeping_every_record()
        .context("the transaction state topic's config")?;
    (0..count)
        .map(|p| {
            let tp = state_tp(p);
            let h = match logs.lookup(&tp) {
                Ok(Some(h)) => h,
                Ok(None) => {
                    let Some(topic_id) = topic_id else {
                        return Ok(Err(format!(
                            "{tp} is missing and every other partition of \
                             {TRANSACTION_STATE_TOPIC} is offline"
                        )));
                    };
                    logs.create(&tp, topic_id, log_config.clone())
                        .with_context(|| format!("creating {tp}"))?
                }
                Err(e @ EngineError::LogDirOffline { .. }) => return Ok(Err(e.to_string())),
                Err(e) => return Err(e).with_context(|| format!("looking up {tp}")),
            };
            logs.keep_every_record(&tp)
                .with_context(|| format!("pinning the retention of {tp}"))?;
            Ok(Ok(h))
        })
        .collect()
}

/// Replays one `__transaction_state` partition into `loaded`.
fn load_partition(
    h: &PartitionHandle,
    partition: i32,
    partitions: i32,
    loaded: &mut Loaded,
) -> anyhow::Result<()> {
    let (mut offset, end) = {
        let log = h.read();
        (log.log_start_offset(), log.log_end_offset())
    };
    while offset < end {
        let info = h
            .read()
            .read(offset, LOAD_READ_BYTES, FetchIsolation::LogEnd, true)?;
        let Some(data) = info.records else { break };
        let bytes = data.slice.read_all()?;
        let before = offset;
        // Any magic, as Kafka's loader: a partition carried over from an older Kafka holds
        // legacy entries, whose records have keys and values as v2 ones.
        for batch in Batches::new(bytes).legacy(true) {
            let batch = batch?;
            if batch.next_offset() <= offset {
                continue;
            }
            if !batch.is_control() {
                for r in batch.records()? {
                    let r = r?;
                    if r.offset < offset {
                        continue;
                    }
                    loaded.records += 1;
                    apply_record(&r, partition, partitions, loaded)?;
                }
            }
            offset = batch.next_offset();
        }
        anyhow::ensure!(offset > before, "no progress reading at offset {offset}");
    }
    Ok(())
}

fn apply_record(
    r: &mirrorlog_segment::Record,
    partition: i32,
    partitions: i32,
    loaded: &mut Loaded,
) -> anyhow::Result<()> {
    let Some(key) = &r.key else {
        tracing::warn!(partition, offset = %r.offset, "record without key skipped");
        return Ok(());
    };
    let record = state_log::decode_record(key, r.value.as_deref())
        .with_context(|| format!("record at offset {}", r.offset))?;
    match record {
        StateRecord::Txn {
            transactional_id,
            metadata,
        } => {
            if partition_for(&transactional_id, partitions) != partition {
                tracing::warn!(
                    transactional_id,
                    partition,
                    "transactional id found outside its partition"
                );
            }
            match metadata {
                None => {
                    loaded.txns.remove(&transactional_id);
                }
                Some(m) if m.state == TxnState::Dead => {
                    loaded.txns.remove(&transactional_id);
                }
                Some(mut m) => {
                    if m.state == TxnState::PrepareEpochFence {
                        // Never written by Kafka or mirrorlog; the transaction was open.
                        m.state = TxnState::Ongoing;
                    }
                    loaded.txns.insert(transactional_id, m);
                }
            }
        }
        StateRecord::Broker(s) => {
            if partition == 0 {
                loaded.broker = Some(s);
            } else {
                tracing::warn!(partition, "broker record outside partition 0 skipped");
            }
        }
        StateRecord::UnknownKey { version } => {
            tracing::warn!(partition, offset = %r.offset, version, "unknown key version skipped");
        }
        StateRecord::UnknownValue {
            transactional_id,
            version,
        } => {
            tracing::warn!(
                partition,
                offset = %r.offset,
                transactional_id,
                version,
                "unknown value version skipped"
            );
        }
    }
    Ok(())
}
