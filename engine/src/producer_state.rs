//! Producer state: per producer id, the epoch, the last five batches' sequence ranges (for
//! duplicate detection), the coordinator epoch and the open transaction; and per partition, the
//! ongoing and completed-but-not-yet-replicated transactions that define the last stable offset.
//! Kafka's `ProducerStateManager`, `ProducerAppendInfo` and `ProducerStateEntry`.
//!
//! Every batch goes through one pure function, [`ProducerStateManager::transition`], that
//! computes what the batch would change without changing anything; [`commit`] applies it. A
//! leader append checks first, writes the batch, then commits — so a rejected batch changes
//! nothing. Replication and mirror appends never fail here: the source already accepted those
//! batches, so anomalies (an older epoch, a stale coordinator epoch, a non-transactional write
//! inside a transaction) are logged, as Kafka's follower does.
//!
//! KIP-1279's MIRROR_PID_RESET barrier forgets every producer and every open transaction learned
//! so far, identically on the append path, on replay during recovery, and after truncation (which
//! replays). Producers after the barrier start from nothing.
//!
//! [`commit`]: ProducerStateManager::commit

use bytes::Bytes;
use mirrorlog_index::files::PRODUCER_SNAPSHOT_FILE_SUFFIX;
use mirrorlog_index::{
    CoordinatorEpoch, Offset, ProducerEpoch, ProducerId, ProducerSnapshotEntry, Sequence,
    SnapshotFile, TimestampMs, decode_producer_snapshot, encode_producer_snapshot,
    offset_from_file_name, producer_snapshot_file,
};
use mirrorlog_segment::io::{IoError, OpenMode, PwriteStorage, Storage};
use mirrorlog_segment::{ControlRecordType, RecordBatch};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How many batches per producer are kept for duplicate detection (Kafka's
/// `NUM_BATCHES_TO_RETAIN`).
pub const BATCHES_TO_RETAIN: usize = 5;

/// Who is appending: decides which checks apply (Kafka's `AppendOrigin`, plus the mirror).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AppendOrigin {
    /// A producer, through the partition leader: every check.
    Client,
    /// The transaction coordinator writing markers: epoch checks only.
    Coordinator,
    /// A follower copying its leader: offsets and ids kept, anomalies logged.
    Replication,
    /// A mirror fetcher copying a source cluster (KIP-1279): as replication.
    Mirror,
}

impl AppendOrigin {
    fn is_replica(self) -> bool {
        matches!(self, AppendOrigin::Replication | AppendOrigin::Mirror)
    }
}

/// What a producer-state check rejects (each maps to the Kafka error of the same name).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProducerStateError {
    /// `INVALID_PRODUCER_EPOCH`: the batch's epoch is older than the producer's.
    #[error(
        "producer {producer_id} epoch {epoch} at offset {offset} is older than the current epoch {current}"
    )]
    InvalidProducerEpoch {
        /// The producer.
        producer_id: ProducerId,
        /// The batch's epoch.
        epoch: ProducerEpoch,
        /// The producer's current epoch.
        current: ProducerEpoch,
        /// Where the batch would have gone.
        offset: Offset,
    },
    /// `OUT_OF_ORDER_SEQUENCE_NUMBER`.
    #[error("producer {producer_id} at offset {offset}: sequence {sequence} does not follow {last}{}", if *new_epoch { " (a new epoch must start at 0)" } else { "" })]
    OutOfOrderSequence {
        /// The producer.
        producer_id: ProducerId,
        /// The batch's first sequence.
        sequence: Sequence,
        /// The producer's last sequence.
        last: Sequence,
        /// Whether the batch opened a new epoch.
        new_epoch: bool,
        /// Where the batch would have gone.
        offset: Offset,
    },
    /// `INVALID_TXN_STATE`: a transactional write without an open transaction state fits, or a
    /// non-transactional write while the producer's transaction is open.
    #[error("producer {producer_id} at offset {offset}: {reason}")]
    InvalidTxnState {
        /// The producer.
        producer_id: ProducerId,
        /// Where the batch would have gone.
        offset: Offset,
        /// What is wrong.
        reason: &'static str,
    },
    /// `TRANSACTION_COORDINATOR_FENCED`: a marker from an older coordinator epoch.
    #[error(
        "producer {producer_id}: marker from coordinator epoch {epoch} is older than {current}"
    )]
    CoordinatorFenced {
        /// The producer.
        producer_id: ProducerId,
        /// The marker's coordinator epoch.
        epoch: i32,
        /// The last coordinator epoch seen.
        current: i32,
    },
}

/// One retained batch's sequence range (Kafka's `BatchMetadata`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    /// Last sequence of the batch.
    pub last_seq: Sequence,
    /// Last offset of the batch.
    pub last_offset: Offset,
    /// `last_offset - first offset`.
    pub offset_delta: i32,
    /// The batch's max timestamp.
    pub timestamp: TimestampMs,
}

impl BatchMetadata {
    /// First sequence (`last_seq - offset_delta`, wrapping like Kafka's `decrementSequence`).
    pub fn first_seq(&self) -> Sequence {
        let s = self.last_seq.get() as i64 - self.offset_delta as i64;
        Sequence(if s < 0 {
            (s + i32::MAX as i64 + 1) as i32
        } else {
            s as i32
        })
    }
    /// First offset.
    pub fn first_offset(&self) -> Offset {
        Offset(self.last_offset.get() - self.offset_delta as i64)
    }
}

/// One producer's state (Kafka's `ProducerStateEntry`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerStateEntry {
    /// The producer id.
    pub producer_id: ProducerId,
    /// Its current epoch (−1 before any).
    pub producer_epoch: ProducerEpoch,
    /// The last transaction coordinator epoch seen in a marker (−1 before any).
    pub coordinator_epoch: i32,
    /// Timestamp of its last batch or marker.
    pub last_timestamp: TimestampMs,
    /// First offset of its open transaction.
    pub current_txn_first_offset: Option<Offset>,
    /// The last batches, oldest first, at most [`BATCHES_TO_RETAIN`].
    pub batches: VecDeque<BatchMetadata>,
}

impl ProducerStateEntry {
    fn empty(producer_id: ProducerId) -> Self {
        ProducerStateEntry {
            producer_id,
            producer_epoch: ProducerEpoch::NONE,
            coordinator_epoch: -1,
            last_timestamp: TimestampMs::NONE,
            current_txn_first_offset: None,
            batches: VecDeque::new(),
        }
    }

    /// Last sequence, or none.
    pub fn last_seq(&self) -> Sequence {
        self.batches.back().map_or(Sequence::NONE, |b| b.last_seq)
    }

    /// Last data offset, or −1.
    pub fn last_data_offset(&self) -> Offset {
        self.batches.back().map_or(Offset(-1), |b| b.last_offset)
    }

    fn maybe_update_epoch(&mut self, epoch: ProducerEpoch) {
        if self.producer_epoch != epoch {
            self.batches.clear();
            self.producer_epoch = epoch;
        }
    }

    fn add_batch(&mut self, epoch: ProducerEpoch, meta: BatchMetadata) {
        self.maybe_update_epoch(epoch);
        self.batches.push_back(meta);
        if self.batches.len() > BATCHES_TO_RETAIN {
            self.batches.pop_front();
        }
        self.last_timestamp = meta.timestamp;
    }

    /// The retained batch with exactly this epoch and sequence range (a retried produce).
    pub fn find_duplicate(
        &self,
        epoch: ProducerEpoch,
        first: Sequence,
        last: Sequence,
    ) -> Option<BatchMetadata> {
        if epoch != self.producer_epoch {
            return None;
        }
        self.batches
            .iter()
            .copied()
            .find(|b| b.first_seq() == first && b.last_seq == last)
    }

    fn to_snapshot(&self) -> ProducerSnapshotEntry {
        let last = self.batches.back();
        ProducerSnapshotEntry {
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            last_sequence: self.last_seq(),
            last_offset: self.last_data_offset(),
            offset_delta: last.map_or(0, |b| b.offset_delta),
            timestamp: self.last_timestamp,
            coordinator_epoch: CoordinatorEpoch(self.coordinator_epoch),
            current_txn_first_offset: self.current_txn_first_offset,
        }
    }

    fn from_snapshot(e: &ProducerSnapshotEntry) -> Self {
        let mut batches = VecDeque::new();
        if e.last_offset.get() >= 0 {
            batches.push_back(BatchMetadata {
                last_seq: e.last_sequence,
                last_offset: e.last_offset,
                offset_delta: e.offset_delta,
                timestamp: e.timestamp,
            });
        }
        ProducerStateEntry {
            producer_id: e.producer_id,
            producer_epoch: e.producer_epoch,
            coordinator_epoch: e.coordinator_epoch.get(),
            last_timestamp: e.timestamp,
            current_txn_first_offset: e.current_txn_first_offset,
            batches,
        }
    }
}

/// What a control batch is, for producer state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlKind {
    /// ABORT (false) or COMMIT (true) with the coordinator epoch.
    EndTxn {
        /// COMMIT?
        commit: bool,
        /// The marker's coordinator epoch.
        coordinator_epoch: i32,
    },
    /// KIP-1279's barrier.
    MirrorPidReset,
    /// Any other control record (LEADER_CHANGE, KRaft, unknown): no producer effect.
    Other,
}

/// The header facts of one batch that producer state needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchInfo {
    /// Producer id (negative: none).
    pub producer_id: ProducerId,
    /// Producer epoch.
    pub producer_epoch: ProducerEpoch,
    /// First sequence.
    pub base_sequence: Sequence,
    /// Last sequence.
    pub last_sequence: Sequence,
    /// First offset.
    pub base_offset: Offset,
    /// Last offset.
    pub last_offset: Offset,
    /// Max timestamp.
    pub max_timestamp: TimestampMs,
    /// First record's timestamp (markers use it as the marker time).
    pub first_timestamp: TimestampMs,
    /// Transactional bit.
    pub transactional: bool,
    /// For a control batch, what it is; `None` for data.
    pub control: Option<ControlKind>,
}

impl BatchInfo {
    /// Reads the facts from a batch; a control batch's record is decoded (one small record).
    ///
    /// # Errors
    /// A control batch whose record cannot be decoded (the batch is corrupt).
    pub fn from_batch(b: &RecordBatch) -> Result<BatchInfo, mirrorlog_segment::BatchError> {
        let control = if b.is_control() {
            Some(match b.control_record()? {
                None => ControlKind::Other, // an empty control batch (compacted)
                Some(c) => match (c.kind, c.end_txn) {
                    (ControlRecordType::Abort | ControlRecordType::Commit, Some(m)) => {
                        ControlKind::EndTxn {
                            commit: c.kind == ControlRecordType::Commit,
                            coordinator_epoch: m.coordinator_epoch,
                        }
                    }
                    (ControlRecordType::MirrorPidReset, _) => ControlKind::MirrorPidReset,
                    _ => ControlKind::Other,
                },
            })
        } else {
            None
        };
        let first_timestamp = if b.has_delete_horizon() {
            b.max_timestamp()
        } else {
            b.base_timestamp()
        };
        Ok(BatchInfo {
            producer_id: b.producer_id(),
            producer_epoch: b.producer_epoch(),
            base_sequence: b.base_sequence(),
            last_sequence: b.last_sequence(),
            base_offset: b.base_offset(),
            last_offset: b.last_offset(),
            max_timestamp: b.max_timestamp(),
            first_timestamp,
            transactional: b.is_transactional(),
            control,
        })
    }
}

/// A transaction that a marker ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    /// The producer.
    pub producer_id: ProducerId,
    /// The transaction's first data offset.
    pub first_offset: Offset,
    /// The marker's offset.
    pub last_offset: Offset,
    /// ABORT?
    pub is_aborted: bool,
}

/// An open (or completed, awaiting the high watermark) transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnMetadata {
    /// The producer.
    pub producer_id: ProducerId,
    /// First data offset.
    pub first_offset: Offset,
    /// The marker offset, once completed.
    pub last_offset: Option<Offset>,
}

/// What one batch does to producer state, computed by
/// [`transition`](ProducerStateManager::transition) and applied by
/// [`commit`](ProducerStateManager::commit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transition {
    /// No producer-state effect (no producer id, or a control record of another kind).
    None,
    /// A retried batch already in the log: nothing is appended; its original offsets are
    /// returned to the producer.
    Duplicate(BatchMetadata),
    /// The producer's entry after the batch, and the transaction it opened or ended.
    Update {
        /// The new entry.
        entry: ProducerStateEntry,
        /// A transaction this batch opened (its first offset).
        started_txn: Option<Offset>,
        /// A transaction this marker ended.
        completed: Option<CompletedTxn>,
    },
    /// MIRROR_PID_RESET: forget every producer and open transaction.
    Reset,
}

/// The partition's producer state.
#[derive(Debug)]
pub struct ProducerStateManager {
    /// Where snapshots live: the partition directory, through the log's storage.
    snapshots: Option<SnapshotDir>,
    producers: HashMap<ProducerId, ProducerStateEntry>,
    ongoing_txns: BTreeMap<Offset, TxnMetadata>,
    unreplicated_txns: BTreeMap<Offset, TxnMetadata>,
    /// The offset after the last batch applied (Kafka's `lastMapOffset`).
    map_end_offset: Offset,
    last_snapshot_offset: Offset,
    producer_id_expiration_ms: i64,
}

fn inc(s: Sequence) -> Sequence {
    s.increment(1)
}

impl ProducerStateManager {
    /// An empty state for a log in `dir` (`None`: no snapshots, for tests and simulation), its
    /// snapshots plain files (through [`PwriteStorage`]).
    pub fn new(dir: Option<&Path>, producer_id_expiration_ms: i64) -> Self {
        match dir {
            Some(dir) => Self::with_storage(
                Arc::new(PwriteStorage::new()),
                dir,
                producer_id_expiration_ms,
            ),
            None => Self::without_snapshots(producer_id_expiration_ms),
        }
    }

    /// An empty state for a log in `dir` whose snapshots are written, listed, read and removed
    /// through `storage` (the log's own), so that their durability is the storage's: a snapshot
    /// is durable once its bytes are synced and its rename into place is synced into `dir`.
    pub fn with_storage(
        storage: Arc<dyn Storage>,
        dir: &Path,
        producer_id_expiration_ms: i64,
    ) -> Self {
        ProducerStateManager {
            snapshots: Some(SnapshotDir {
                storage,
                dir: dir.to_path_buf(),
            }),
            ..Self::without_snapshots(producer_id_expiration_ms)
        }
    }

    fn without_snapshots(producer_id_expiration_ms: i64) -> Self {
        ProducerStateManager {
            snapshots: None,
            producers: HashMap::new(),
            ongoing_txns: BTreeMap::new(),
            unreplicated_txns: BTreeMap::new(),
            map_end_offset: Offset(0),
            last_snapshot_offset: Offset(0),
            producer_id_expiration_ms,
        }
    }

    /// The offset after the last batch applied.
    pub fn map_end_offset(&self) -> Offset {
        self.map_end_offset
    }

    /// Moves the map end offset up to `offset` (Kafka's `updateMapEndOffset`): a roll to a new
    /// segment above the log end (a replica's batch after a gap) takes its snapshot at the new
    /// segment's base, where recovery of that segment starts and where retention, deleting the
    /// segments below, leaves it.
    pub fn update_map_end_offset(&mut self, offset: Offset) {
        self.map_end_offset = self.map_end_offset.max(offset);
    }

    /// A producer's entry.
    pub fn entry(&self, id: ProducerId) -> Option<&ProducerStateEntry> {
        self.producers.get(&id)
    }

    /// All producers, in no particular order.
    pub fn producers(&self) -> impl Iterator<Item = &ProducerStateEntry> {
        self.producers.values()
    }

    /// Number of producers held.
    pub fn producer_count(&self) -> usize {
        self.producers.len()
    }

    /// Kafka's `UnifiedLog.hasOngoingTransaction`: the producer has a transaction open in this
    /// partition at exactly `epoch` (with a newer epoch, the open one is being ended).
    pub fn has_ongoing_transaction(&self, id: ProducerId, epoch: ProducerEpoch) -> bool {
        self.producers
            .get(&id)
            .is_some_and(|e| e.current_txn_first_offset.is_some() && e.producer_epoch == epoch)
    }

    /// Open transactions, by first offset.
    pub fn ongoing_txns(&self) -> impl Iterator<Item = &TxnMetadata> {
        self.ongoing_txns.values()
    }

    /// Computes what `batch` would change, without changing anything. For [`AppendOrigin::Client`]
    /// a retried batch comes back as [`Transition::Duplicate`].
    ///
    /// # Errors
    /// A client or coordinator batch the leader's checks refuse (its producer epoch, sequence or
    /// transaction state). Replica origins never fail.
    pub fn transition(
        &self,
        b: &BatchInfo,
        origin: AppendOrigin,
    ) -> Result<Transition, ProducerStateError> {
        if b.control == Some(ControlKind::MirrorPidReset) {
            return Ok(Transition::Reset);
        }
        if !b.producer_id.is_some() {
            return Ok(Transition::None);
        }
        let current = self.producers.get(&b.producer_id);
        let mut entry = current
            .cloned()
            .unwrap_or_else(|| ProducerStateEntry::empty(b.producer_id));
        match b.control {
            Some(ControlKind::MirrorPidReset) => unreachable!("handled above"),
            Some(ControlKind::Other) => Ok(Transition::None),
            Some(ControlKind::EndTxn {
                commit,
                coordinator_epoch,
            }) => {
                self.check_epoch(&entry, b, origin)?;
                if entry.coordinator_epoch > coordinator_epoch {
                    if origin.is_replica() {
                        tracing::info!(
                            producer_id = %b.producer_id,
                            "marker at {} from coordinator epoch {coordinator_epoch} is older than {}",
                            b.base_offset,
                            entry.coordinator_epoch
                        );
                    } else {
                        return Err(ProducerStateError::CoordinatorFenced {
                            producer_id: b.producer_id,
                            epoch: coordinator_epoch,
                            current: entry.coordinator_epoch,
                        });
                    }
                }
                let completed = entry.current_txn_first_offset.map(|first| CompletedTxn {
                    producer_id: b.producer_id,
                    first_offset: first,
                    last_offset: b.base_offset,
                    is_aborted: !commit,
                });
                entry.maybe_update_epoch(b.producer_epoch);
                entry.current_txn_first_offset = None;
                entry.coordinator_epoch = coordinator_epoch;
                entry.last_timestamp = b.first_timestamp;
                Ok(Transition::Update {
                    entry,
                    started_txn: None,
                    completed,
                })
            }
            None => {
                if origin == AppendOrigin::Client
                    && let Some(dup) = current.and_then(|e| {
                        e.find_duplicate(b.producer_epoch, b.base_sequence, b.last_sequence)
                    })
                {
                    return Ok(Transition::Duplicate(dup));
                }
                self.check_epoch(&entry, b, origin)?;
                if origin == AppendOrigin::Client {
                    check_sequence(&entry, b)?;
                }
                let meta = BatchMetadata {
                    last_seq: b.last_sequence,
                    last_offset: b.last_offset,
                    offset_delta: (b.last_offset.get() - b.base_offset.get()) as i32,
                    timestamp: b.max_timestamp,
                };
                let mut started_txn = None;
                match (entry.current_txn_first_offset, b.transactional) {
                    (Some(_), false) => {
                        let reason =
                            "a non-transactional write while the producer's transaction is open";
                        if origin.is_replica() {
                            tracing::warn!(producer_id = %b.producer_id, offset = %b.base_offset, "{reason}");
                            return Ok(Transition::None);
                        }
                        return Err(ProducerStateError::InvalidTxnState {
                            producer_id: b.producer_id,
                            offset: b.base_offset,
                            reason,
                        });
                    }
                    (None, true) => {
                        entry.current_txn_first_offset = Some(b.base_offset);
                        started_txn = Some(b.base_offset);
                    }
                    _ => {}
                }
                entry.add_batch(b.producer_epoch, meta);
                Ok(Transition::Update {
                    entry,
                    started_txn,
                    completed: None,
                })
            }
        }
    }

    fn check_epoch(
        &self,
        entry: &ProducerStateEntry,
        b: &BatchInfo,
        origin: AppendOrigin,
    ) -> Result<(), ProducerStateError> {
        if b.producer_epoch < entry.producer_epoch {
            if origin.is_replica() {
                tracing::warn!(
                    producer_id = %b.producer_id,
                    "epoch {} at offset {} is older than the last seen epoch {}",
                    b.producer_epoch,
                    b.base_offset,
                    entry.producer_epoch
                );
            } else {
                return Err(ProducerStateError::InvalidProducerEpoch {
                    producer_id: b.producer_id,
                    epoch: b.producer_epoch,
                    current: entry.producer_epoch,
                    offset: b.base_offset,
                });
            }
        }
        Ok(())
    }

    /// Applies a transition computed by [`transition`](Self::transition) for the batch that was
    /// just written, and advances the map end offset past `last_offset`. Returns the transaction
    /// a marker completed (the log writes its transaction-index entry and moves the LSO).
    pub fn commit(&mut self, t: Transition, last_offset: Offset) -> Option<CompletedTxn> {
        let mut completed_out = None;
        match t {
            Transition::None | Transition::Duplicate(_) => {}
            Transition::Reset => self.reset_producers(),
            Transition::Update {
                entry,
                started_txn,
                completed,
            } => {
                let pid = entry.producer_id;
                if let Some(first) = started_txn {
                    self.ongoing_txns.insert(
                        first,
                        TxnMetadata {
                            producer_id: pid,
                            first_offset: first,
                            last_offset: None,
                        },
                    );
                }
                self.producers.insert(pid, entry);
                if let Some(c) = completed {
                    completed_out = Some(c);
                }
            }
        }
        self.map_end_offset = self.map_end_offset.max(last_offset.next());
        completed_out
    }

    /// Applies one batch that is already in the log, with replica semantics (recovery replay,
    /// follower and mirror appends). Returns the transaction it completed.
    pub fn replay(&mut self, b: &BatchInfo, origin: AppendOrigin) -> Option<CompletedTxn> {
        let origin = if origin.is_replica() {
            origin
        } else {
            AppendOrigin::Replication
        };
        let t = self
            .transition(b, origin)
            .expect("replica transitions never fail");
        self.commit(t, b.last_offset)
    }

    /// Kafka's `lastStableOffset(completedTxn)`: the first offset of the earliest other open
    /// transaction, else the marker offset + 1.
    pub fn last_stable_offset(&self, completed: &CompletedTxn) -> Offset {
        self.ongoing_txns
            .values()
            .find(|t| t.producer_id != completed.producer_id)
            .map_or(completed.last_offset.next(), |t| t.first_offset)
    }

    /// Moves a completed transaction from ongoing to unreplicated (it stays unstable until the
    /// high watermark passes its marker).
    pub fn complete_txn(&mut self, c: &CompletedTxn) {
        match self.ongoing_txns.remove(&c.first_offset) {
            Some(mut t) => {
                t.last_offset = Some(c.last_offset);
                self.unreplicated_txns.insert(c.first_offset, t);
            }
            None => tracing::warn!(
                producer_id = %c.producer_id,
                "completing a transaction at {} that was not open (its start was truncated or reset)",
                c.first_offset
            ),
        }
    }

    /// The high watermark moved: completed transactions whose marker is below it are stable.
    pub fn on_high_watermark_updated(&mut self, hw: Offset) {
        self.unreplicated_txns
            .retain(|_, t| t.last_offset.is_none_or(|l| l >= hw));
    }

    /// Kafka's `firstUnstableOffset`: the earliest first offset of an open or not yet replicated
    /// transaction.
    pub fn first_unstable_offset(&self) -> Option<Offset> {
        let a = self.unreplicated_txns.keys().next().copied();
        let b = self.ongoing_txns.keys().next().copied();
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// MIRROR_PID_RESET: forget every producer and open transaction learned so far. Completed
    /// transactions awaiting the high watermark stay (they are already decided).
    pub fn reset_producers(&mut self) {
        self.producers.clear();
        self.ongoing_txns.clear();
    }

    /// Removes producers idle for `producer.id.expiration.ms` with no open transaction.
    pub fn remove_expired_producers(&mut self, now_ms: i64) -> usize {
        let before = self.producers.len();
        let exp = self.producer_id_expiration_ms;
        self.producers.retain(|_, e| {
            e.current_txn_first_offset.is_some()
                || now_ms.saturating_sub(e.last_timestamp.get()) < exp
        });
        before - self.producers.len()
    }

    /// Forget everything and start at `offset` (Kafka's `truncateFullyAndStartAt`): snapshots are
    /// deleted. The state in memory starts at `offset` even when a deletion fails.
    ///
    /// # Errors
    /// Listing or removing a snapshot file failed.
    pub fn truncate_fully_and_start_at(
        &mut self,
        offset: Offset,
    ) -> Result<(), mirrorlog_index::Error> {
        self.producers.clear();
        self.ongoing_txns.clear();
        self.unreplicated_txns.clear();
        self.map_end_offset = offset;
        self.last_snapshot_offset = offset;
        for s in self.snapshots()? {
            self.remove_snapshot(&s.path)?;
        }
        Ok(())
    }

    /// The snapshot files, oldest first.
    ///
    /// # Errors
    /// The directory cannot be listed.
    pub fn snapshots(&self) -> Result<Vec<SnapshotFile>, mirrorlog_index::Error> {
        match &self.snapshots {
            Some(d) => d.list(),
            None => Ok(vec![]),
        }
    }

    fn remove_snapshot(&self, path: &Path) -> Result<(), mirrorlog_index::Error> {
        match &self.snapshots {
            Some(d) => d.remove(path),
            None => Ok(()),
        }
    }

    /// Writes `<map end offset>.snapshot` if anything was applied since the last one.
    ///
    /// # Errors
    /// Writing or syncing the snapshot failed.
    pub fn take_snapshot(&mut self) -> Result<Option<PathBuf>, mirrorlog_index::Error> {
        let Some(snapshots) = &self.snapshots else {
            return Ok(None);
        };
        if self.map_end_offset <= self.last_snapshot_offset
            && snapshots
                .storage
                .exists(&producer_snapshot_file(&snapshots.dir, self.map_end_offset))
        {
            return Ok(None);
        }
        let mut entries: Vec<ProducerSnapshotEntry> = self
            .producers
            .values()
            .map(ProducerStateEntry::to_snapshot)
            .collect();
        entries.sort_by_key(|e| e.producer_id);
        let path = snapshots.write(self.map_end_offset, &entries)?;
        self.last_snapshot_offset = self.map_end_offset;
        Ok(Some(path))
    }

    /// Kafka's `truncateAndReload`: deletes snapshots outside `(log_start, log_end]` (one at the
    /// log start itself too, as Kafka: after a full truncation to `log_start` a snapshot of the
    /// old log at that offset may come back from a crash, its removal never synced), then, unless
    /// the state already ends at `log_end`, reloads from the newest snapshot ≤ `log_end`
    /// (a corrupt one is deleted and an older one tried). Returns the offset the caller must
    /// replay the log from (to `log_end`) with [`replay`](Self::replay).
    ///
    /// # Errors
    /// Listing, reading (other than a corrupt snapshot) or removing a snapshot file failed.
    pub fn truncate_and_reload(
        &mut self,
        log_start: Offset,
        log_end: Offset,
        now_ms: i64,
    ) -> Result<Offset, mirrorlog_index::Error> {
        for s in self.snapshots()? {
            if s.offset <= log_start || s.offset > log_end {
                self.remove_snapshot(&s.path)?;
            }
        }
        if self.map_end_offset == log_end && log_end != log_start {
            return Ok(log_end);
        }
        self.producers.clear();
        self.ongoing_txns.clear();
        self.unreplicated_txns.clear();
        let mut snaps = self.snapshots()?;
        while let Some(s) = snaps.pop() {
            let read = match &self.snapshots {
                Some(d) => d.read(&s.path),
                None => Ok(vec![]),
            };
            match read {
                Ok(entries) => {
                    for e in &entries {
                        let entry = ProducerStateEntry::from_snapshot(e);
                        let expired = entry.current_txn_first_offset.is_none()
                            && now_ms.saturating_sub(entry.last_timestamp.get())
                                >= self.producer_id_expiration_ms;
                        if expired {
                            continue;
                        }
                        if let Some(first) = entry.current_txn_first_offset {
                            self.ongoing_txns.insert(
                                first,
                                TxnMetadata {
                                    producer_id: entry.producer_id,
                                    first_offset: first,
                                    last_offset: None,
                                },
                            );
                        }
                        self.producers.insert(entry.producer_id, entry);
                    }
                    self.map_end_offset = s.offset;
                    self.last_snapshot_offset = s.offset;
                    return Ok(s.offset);
                }
                // As Kafka's `loadFromSnapshot`: only a snapshot whose bytes do not decode is
                // deleted; a failure of the storage reading it goes up (the caller takes the data
                // directory offline) and leaves the file for the next start.
                Err(e @ mirrorlog_index::Error::Io { .. }) => return Err(e),
                Err(e) => {
                    tracing::warn!(
                        "deleting corrupt producer snapshot {}: {}",
                        s.path.display(),
                        mirrorlog_index::ErrorChain(&e)
                    );
                    self.remove_snapshot(&s.path)?;
                }
            }
        }
        self.map_end_offset = log_start;
        self.last_snapshot_offset = log_start;
        Ok(log_start)
    }

    /// Renames the snapshots whose offset `which` picks with `.deleted` when segments are
    /// deleted, and returns the new names, for the caller to remove once
    /// `file.delete.delay.ms` has passed (Kafka's `deleteProducerSnapshots` with `asyncDelete`:
    /// `removeAndMarkSnapshotForDeletion` of each deleted segment's base); an open removes any
    /// left. Retention picks every one below the first remaining segment's base (the one at
    /// that base, taken when that segment was rolled, stays for a reload), a truncation those
    /// at the deleted segments' bases. A snapshot already gone is skipped, as Kafka's. The
    /// renames are made durable (one sync of the directory), as a segment's are.
    ///
    /// # Errors
    /// Listing, renaming or the directory's sync failed.
    pub fn mark_snapshots_deleted(
        &mut self,
        which: impl Fn(Offset) -> bool,
    ) -> Result<Vec<PathBuf>, mirrorlog_index::Error> {
        let Some(d) = &self.snapshots else {
            return Ok(vec![]);
        };
        let mut renamed = vec![];
        for s in d.list()? {
            if !which(s.offset) {
                continue;
            }
            let mut to = s.path.clone().into_os_string();
            to.push(mirrorlog_segment::segment::DELETED_SUFFIX);
            let to = PathBuf::from(to);
            match d.storage.rename(&s.path, &to) {
                Ok(()) => renamed.push(to),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(index_io(e)),
            }
        }
        if !renamed.is_empty() {
            d.storage.sync_dir(&d.dir).map_err(index_io)?;
        }
        Ok(renamed)
    }

    /// The log start moved to `log_start`: transactions wholly below it no longer matter.
    pub fn on_log_start_offset_incremented(&mut self, log_start: Offset) {
        self.unreplicated_txns
            .retain(|_, t| t.last_offset.is_none_or(|l| l >= log_start));
        if self.map_end_offset < log_start {
            self.map_end_offset = log_start;
        }
    }
}

fn check_sequence(entry: &ProducerStateEntry, b: &BatchInfo) -> Result<(), ProducerStateError> {
    let first = b.base_sequence;
    if b.producer_epoch != entry.producer_epoch {
        if first != Sequence(0) && entry.producer_epoch != ProducerEpoch::NONE {
            return Err(ProducerStateError::OutOfOrderSequence {
                producer_id: b.producer_id,
                sequence: first,
                last: entry.last_seq(),
                new_epoch: true,
                offset: b.base_offset,
            });
        }
        return Ok(());
    }
    let last = entry.last_seq();
    // With no known epoch (state lost to retention or DeleteRecords) any sequence is accepted.
    if entry.producer_epoch == ProducerEpoch::NONE || inc(last) == first {
        return Ok(());
    }
    Err(ProducerStateError::OutOfOrderSequence {
        producer_id: b.producer_id,
        sequence: first,
        last,
        new_epoch: false,
        offset: b.base_offset,
    })
}

/// The snapshot files of one partition directory, kept through the log's storage.
#[derive(Debug)]
struct SnapshotDir {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
}

/// An [`IoError`] as the index crate's error (what producer-state operations return).
fn index_io(e: IoError) -> mirrorlog_index::Error {
    mirrorlog_index::Error::Io {
        op: e.op.as_str(),
        path: e.path,
        source: e.source,
    }
}

impl SnapshotDir {
    /// The snapshot files, by increasing offset: files named `<offset>.snapshot` (not
    /// `.snapshot.tmp` or `.snapshot.deleted`).
    fn list(&self) -> Result<Vec<SnapshotFile>, mirrorlog_index::Error> {
        let mut found: Vec<SnapshotFile> = self
            .storage
            .list_dir(&self.dir)
            .map_err(index_io)?
            .into_iter()
            .filter_map(|path| {
                let name = path.file_name()?.to_str()?;
                if !name.ends_with(PRODUCER_SNAPSHOT_FILE_SUFFIX) {
                    return None;
                }
                let offset = offset_from_file_name(name)?;
                Some(SnapshotFile { offset, path })
            })
            .collect();
        found.sort();
        Ok(found)
    }

    fn read(&self, path: &Path) -> Result<Vec<ProducerSnapshotEntry>, mirrorlog_index::Error> {
        let file = self.storage.open(path, OpenMode::Read).map_err(index_io)?;
        let len = file.len().map_err(index_io)?;
        let len = usize::try_from(len).map_err(|_| mirrorlog_index::Error::Io {
            op: "read",
            path: path.to_path_buf(),
            source: std::io::Error::from(std::io::ErrorKind::FileTooLarge),
        })?;
        let bytes = file.read_exact_vec(len, 0).map_err(index_io)?;
        decode_producer_snapshot(path, &bytes)
    }

    /// Writes the snapshot at `offset` atomically and durably, as Kafka does: a `.tmp` file
    /// written and synced, renamed into place, the directory synced. On failure the `.tmp` is
    /// removed (best effort) and any snapshot already at `offset` is left as it was.
    fn write(
        &self,
        offset: Offset,
        entries: &[ProducerSnapshotEntry],
    ) -> Result<PathBuf, mirrorlog_index::Error> {
        let path = producer_snapshot_file(&self.dir, offset);
        let mut tmp = path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let bytes = Bytes::from(encode_producer_snapshot(entries));
        let written = (|| {
            let file = self.storage.open(&tmp, OpenMode::CreateOrOpen)?;
            file.set_len(0)?;
            file.write_all_at(&[bytes], 0, true)?;
            drop(file);
            self.storage.rename(&tmp, &path)
        })();
        if let Err(e) = written {
            let _ = self.storage.remove(&tmp);
            return Err(index_io(e));
        }
        self.storage.sync_dir(&self.dir).map_err(index_io)?;
        Ok(path)
    }

    /// Removes a snapshot; one already gone is no error.
    fn remove(&self, path: &Path) -> Result<(), mirrorlog_index::Error> {
        match self.storage.remove(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(mirrorlog_index::Error::Io {
                op: "delete snapshot",
                path: e.path,
                source: e.source,
            }),
        }
    }
}

#[cfg(test)]
mod tests;
