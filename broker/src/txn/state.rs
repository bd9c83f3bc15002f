//! One transactional id's state, and the transitions Kafka's `TransactionMetadata` allows.
//!
//! Every transition is computed on a copy ([`TxnMetadata`] is a value); the coordinator writes
//! the copy to `__transaction_state` and only then replaces the in-memory state with it, so a
//! failed write changes nothing.
//!
//! ```text
//!  (new id) ─InitProducerId─▶ Empty ─Add*─▶ Ongoing ─EndTxn(commit)─▶ PrepareCommit ─markers─▶ CompleteCommit
//!                                              │
//!                                              └─EndTxn(abort), timeout, fencing─▶ PrepareAbort ─markers─▶ CompleteAbort
//!
//!  Empty, CompleteCommit, CompleteAbort:  InitProducerId ─▶ Empty (epoch + 1)
//!                                         Add* ─▶ Ongoing (a new transaction)
//!                                         idle past transactional.id.expiration.ms ─▶ Dead (tombstone)
//! ```
//!
//! Kafka's `PrepareEpochFence` is a pending state that is never written; here fencing goes
//! straight from Ongoing to PrepareAbort with the bumped epoch (see
//! [`TxnMetadata::prepare_fenced_abort`]).

use super::error::TxnError;
use mirrorlog_index::{ProducerEpoch, ProducerId, TopicPartition};
use std::collections::BTreeSet;

/// Kafka's `TransactionState`, with its on-disk ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxnState {
    /// No transaction in progress (after InitProducerId).
    Empty,
    /// Partitions or offsets were added: a transaction is open.
    Ongoing,
    /// EndTxn(commit) was accepted; COMMIT markers are being written.
    PrepareCommit,
    /// EndTxn(abort), a timeout or fencing: ABORT markers are being written.
    PrepareAbort,
    /// Every COMMIT marker is written.
    CompleteCommit,
    /// Every ABORT marker is written.
    CompleteAbort,
    /// The transactional id expired and is being removed.
    Dead,
    /// Kafka's pending state while fencing a producer (never written by mirrorlog).
    PrepareEpochFence,
}

impl TxnState {
    /// The `transactionStatus` byte of `TransactionLogValue`.
    pub fn id(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
            TxnState::PrepareEpochFence => 7,
        }
    }

    /// The state with this `transactionStatus` byte.
    pub fn from_id(id: i8) -> Option<TxnState> {
        Some(match id {
            0 => TxnState::Empty,
            1 => TxnState::Ongoing,
            2 => TxnState::PrepareCommit,
            3 => TxnState::PrepareAbort,
            4 => TxnState::CompleteCommit,
            5 => TxnState::CompleteAbort,
            6 => TxnState::Dead,
            7 => TxnState::PrepareEpochFence,
            _ => return None,
        })
    }

    /// Kafka's name (DescribeTransactions, ListTransactions).
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// Whether an idle transactional id in this state may expire.
    pub fn is_expiration_allowed(self) -> bool {
        matches!(
            self,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        )
    }

    /// Whether markers are pending (PrepareCommit or PrepareAbort).
    pub fn is_prepared(self) -> bool {
        matches!(self, TxnState::PrepareCommit | TxnState::PrepareAbort)
    }

    /// Kafka's `validPreviousStates`.
    pub fn valid_previous(self, from: TxnState) -> bool {
        use TxnState::*;
        match self {
            Empty => matches!(from, Empty | CompleteCommit | CompleteAbort),
            Ongoing => matches!(from, Ongoing | Empty | CompleteCommit | CompleteAbort),
            PrepareCommit => from == Ongoing,
            // Kafka 4 also allows Empty and Complete* (transactions v2 aborts); v1 does not
            // reach them.
            PrepareAbort => matches!(from, Ongoing | PrepareEpochFence),
            CompleteCommit => from == PrepareCommit,
            CompleteAbort => from == PrepareAbort,
            Dead => matches!(from, Empty | CompleteCommit | CompleteAbort),
            PrepareEpochFence => from == Ongoing,
        }
    }
}

/// Whether a producer epoch leaves no room for another bump (Kafka's
/// `isEpochExhausted`: `epoch >= Short.MAX_VALUE - 1`).
pub fn is_epoch_exhausted(epoch: ProducerEpoch) -> bool {
    epoch.get() >= i16::MAX - 1
}

/// A transactional id's state (Kafka's `TransactionMetadata` without its locks and pending
/// state).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMetadata {
    /// The producer id in use.
    pub producer_id: ProducerId,
    /// The producer id before the last rotation (epoch exhaustion), or none. Persisted only by
    /// value v1; v0 records load it as none.
    pub last_producer_id: ProducerId,
    /// The current producer epoch (−1 before the first InitProducerId completes).
    pub producer_epoch: ProducerEpoch,
    /// The epoch before the last bump, to recognise a retried InitProducerId (KIP-360). Never
    /// persisted (Kafka does not either).
    pub last_producer_epoch: ProducerEpoch,
    /// `transaction.timeout.ms` the producer asked for.
    pub txn_timeout_ms: i32,
    /// The state.
    pub state: TxnState,
    /// Partitions in the transaction (the data partitions and, for AddOffsetsToTxn, the
    /// groups' `__consumer_offsets` partitions).
    pub partitions: BTreeSet<TopicPartition>,
    /// When the transaction started (first partition added), −1 when none.
    pub txn_start_timestamp_ms: i64,
    /// When the state last changed.
    pub txn_last_update_timestamp_ms: i64,
}

impl TxnMetadata {
    /// A new transactional id: `producer_id` allocated, no epoch yet, Empty.
    pub fn new(producer_id: ProducerId, txn_timeout_ms: i32, now_ms: i64) -> TxnMetadata {
        TxnMetadata {
            producer_id,
            last_producer_id: ProducerId::NONE,
            producer_epoch: ProducerEpoch::NONE,
            last_producer_epoch: ProducerEpoch::NONE,
            txn_timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            txn_start_timestamp_ms: -1,
            txn_last_update_timestamp_ms: now_ms,
        }
    }

    fn to(&self, state: TxnState, now_ms: i64) -> TxnMetadata {
        assert!(
            state.valid_previous(self.state),
            "illegal transaction transition {} -> {}",
            self.state.name(),
            state.name()
        );
        let mut next = self.clone();
        next.state = state;
        next.txn_last_update_timestamp_ms = now_ms;
        next
    }

    /// InitProducerId on an idle id: the next epoch, Empty (Kafka's
    /// `prepareIncrementProducerEpoch`). With an `expected` epoch (KIP-360, InitProducerId
    /// v3+): the current epoch bumps it, the epoch before the last bump is a retry and returns
    /// the current epoch unchanged, any other is fenced.
    ///
    /// # Errors
    /// [`TxnError::ProducerFenced`] for a stale expected epoch.
    ///
    /// # Panics
    /// If the epoch is exhausted and would be bumped (the caller rotates the producer id
    /// instead; a retry or a fenced expected epoch is answered at any epoch) or a transaction
    /// is open.
    pub fn prepare_increment_epoch(
        &self,
        txn_timeout_ms: i32,
        expected: Option<ProducerEpoch>,
        now_ms: i64,
    ) -> Result<TxnMetadata, TxnError> {
        let bumped = || {
            assert!(
                !is_epoch_exhausted(self.producer_epoch),
                "producer {} has exhausted its epochs",
                self.producer_id
            );
            ProducerEpoch(self.producer_epoch.get() + 1)
        };
        let (epoch, last) = match expected {
            None => (bumped(), ProducerEpoch::NONE),
            Some(e) if self.producer_epoch == ProducerEpoch::NONE || e == self.producer_epoch => {
                (bumped(), self.producer_epoch)
            }
            Some(e) if e == self.last_producer_epoch => {
                (self.producer_epoch, self.last_producer_epoch)
            }
            Some(_) => return Err(TxnError::ProducerFenced),
        };
        let mut next = self.to(TxnState::Empty, now_ms);
        next.producer_epoch = epoch;
        next.last_producer_epoch = last;
        next.txn_timeout_ms = txn_timeout_ms;
        next.partitions.clear();
        next.txn_start_timestamp_ms = -1;
        Ok(next)
    }

    /// InitProducerId when the epoch is exhausted: a new producer id at epoch 0, Empty
    /// (Kafka's `prepareProducerIdRotation`). `record_last_epoch` keeps the old epoch so that a
    /// retry of the same request is recognised.
    pub fn prepare_rotation(
        &self,
        new_producer_id: ProducerId,
        txn_timeout_ms: i32,
        now_ms: i64,
        record_last_epoch: bool,
    ) -> TxnMetadata {
        let mut next = self.to(TxnState::Empty, now_ms);
        next.last_producer_id = self.producer_id;
        next.producer_id = new_producer_id;
        next.producer_epoch = ProducerEpoch(0);
        next.last_producer_epoch = if record_last_epoch {
            self.producer_epoch
        } else {
            ProducerEpoch::NONE
        };
        next.txn_timeout_ms = txn_timeout_ms;
        next.partitions.clear();
        next.txn_start_timestamp_ms = -1;
        next
    }

    /// AddPartitionsToTxn / AddOffsetsToTxn: Ongoing with `added` joined; a new transaction
    /// starts its clock now.
    pub fn prepare_add_partitions(
        &self,
        added: impl IntoIterator<Item = TopicPartition>,
        now_ms: i64,
    ) -> TxnMetadata {
        let starting = matches!(
            self.state,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        );
        let mut next = self.to(TxnState::Ongoing, now_ms);
        if starting {
            next.partitions.clear();
            next.txn_start_timestamp_ms = now_ms;
        }
        next.partitions.extend(added);
        next
    }

    /// EndTxn: PrepareCommit or PrepareAbort.
    pub fn prepare_abort_or_commit(&self, commit: bool, now_ms: i64) -> TxnMetadata {
        let state = if commit {
            TxnState::PrepareCommit
        } else {
            TxnState::PrepareAbort
        };
        self.to(state, now_ms)
    }

    /// Fencing an open transaction (a new producer incarnation, or a timeout): the epoch is
    /// bumped so the old producer can no longer write, and the transaction goes to
    /// PrepareAbort with the new epoch (Kafka's `prepareFenceProducerEpoch` followed by the
    /// abort). The bumped epoch is never returned to a producer.
    pub fn prepare_fenced_abort(&self, now_ms: i64) -> TxnMetadata {
        assert_eq!(
            self.state,
            TxnState::Ongoing,
            "only an open transaction is fenced"
        );
        let mut next = self.to(TxnState::PrepareAbort, now_ms);
        // At i16::MAX there is no epoch left to fence with; InitProducerId never hands out an
        // epoch above i16::MAX − 1, so this cannot happen for a transaction it opened.
        next.producer_epoch = ProducerEpoch(self.producer_epoch.get().saturating_add(1));
        next.last_producer_epoch = ProducerEpoch::NONE;
        next
    }

    /// Every marker written: CompleteCommit or CompleteAbort, no partitions.
    ///
    /// # Panics
    /// If no markers were pending.
    pub fn prepare_complete(&self, now_ms: i64) -> TxnMetadata {
        let state = match self.state {
            TxnState::PrepareCommit => TxnState::CompleteCommit,
            TxnState::PrepareAbort => TxnState::CompleteAbort,
            s => panic!("no markers pending in state {}", s.name()),
        };
        let mut next = self.to(state, now_ms);
        next.partitions.clear();
        next
    }

    /// Expiration: Dead.
    pub fn prepare_dead(&self) -> TxnMetadata {
        let mut next = self.clone();
        assert!(TxnState::Dead.valid_previous(self.state));
        next.state = TxnState::Dead;
        next
    }

    /// Whether an InitProducerId carrying `expected` may proceed (Kafka's `isValidProducerId`):
    /// the id was just created, or the producer id is the current one, or it is the previous
    /// one with an exhausted epoch (a retry after a rotation).
    pub fn accepts_expected(&self, expected: (ProducerId, ProducerEpoch)) -> bool {
        self.producer_epoch == ProducerEpoch::NONE
            || expected.0 == self.producer_id
            || (expected.0 == self.last_producer_id && is_epoch_exhausted(expected.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition {
            topic: "t".into(),
            partition: p,
        }
    }

    fn fresh() -> TxnMetadata {
        TxnMetadata::new(ProducerId(10), 1000, 0)
    }

    #[test]
    fn first_init_gives_epoch_zero() {
        let m = fresh().prepare_increment_epoch(1000, None, 5).unwrap();
        assert_eq!(m.producer_epoch, ProducerEpoch(0));
        assert_eq!(m.state, TxnState::Empty);
        assert_eq!(m.txn_last_update_timestamp_ms, 5);
    }

    #[test]
    fn expected_epoch_bumps_retries_and_fences() {
        let m = fresh().prepare_increment_epoch(1000, None, 0).unwrap();
        let m = m.prepare_increment_epoch(1000, None, 0).unwrap(); // epoch 1
        // The producer at epoch 1 asks for a bump: 2, remembering 1.
        let bumped = m
            .prepare_increment_epoch(1000, Some(ProducerEpoch(1)), 0)
            .unwrap();
        assert_eq!(bumped.producer_epoch, ProducerEpoch(2));
        assert_eq!(bumped.last_producer_epoch, ProducerEpoch(1));
        // Its retry (still saying 1) gets 2 again.
        let retry = bumped
            .prepare_increment_epoch(1000, Some(ProducerEpoch(1)), 0)
            .unwrap();
        assert_eq!(retry.producer_epoch, ProducerEpoch(2));
        // Anyone else is fenced.
        assert_eq!(
            bumped.prepare_increment_epoch(1000, Some(ProducerEpoch(0)), 0),
            Err(TxnError::ProducerFenced)
        );
    }

    #[test]
    fn a_transaction_collects_partitions_then_completes_empty() {
        let m = fresh().prepare_increment_epoch(1000, None, 0).unwrap();
        let m = m.prepare_add_partitions([tp(0)], 100);
        assert_eq!(m.state, TxnState::Ongoing);
        assert_eq!(m.txn_start_timestamp_ms, 100);
        let m = m.prepare_add_partitions([tp(1)], 200);
        assert_eq!(m.txn_start_timestamp_ms, 100, "the start stays");
        assert_eq!(m.partitions.len(), 2);
        let m = m.prepare_abort_or_commit(true, 300);
        assert_eq!(m.state, TxnState::PrepareCommit);
        let m = m.prepare_complete(400);
        assert_eq!(m.state, TxnState::CompleteCommit);
        assert!(m.partitions.is_empty());
        let next = m.prepare_add_partitions([tp(2)], 500);
        assert_eq!(
            next.txn_start_timestamp_ms, 500,
            "a new transaction restarts the clock"
        );
        assert_eq!(next.partitions, [tp(2)].into_iter().collect());
    }

    #[test]
    fn fencing_bumps_the_epoch_into_prepare_abort() {
        let m = fresh()
            .prepare_increment_epoch(1000, None, 0)
            .unwrap()
            .prepare_add_partitions([tp(0)], 0);
        let f = m.prepare_fenced_abort(1);
        assert_eq!(f.state, TxnState::PrepareAbort);
        assert_eq!(f.producer_epoch, ProducerEpoch(1));
        assert_eq!(f.partitions, m.partitions);
    }

    #[test]
    fn rotation_starts_a_new_producer_id_at_epoch_zero() {
        let mut m = fresh().prepare_increment_epoch(1000, None, 0).unwrap();
        m.producer_epoch = ProducerEpoch(i16::MAX - 1);
        assert!(is_epoch_exhausted(m.producer_epoch));
        let r = m.prepare_rotation(ProducerId(11), 1000, 0, true);
        assert_eq!(
            (r.producer_id, r.producer_epoch),
            (ProducerId(11), ProducerEpoch(0))
        );
        assert_eq!(r.last_producer_id, ProducerId(10));
        assert!(r.accepts_expected((ProducerId(10), ProducerEpoch(i16::MAX - 1))));
        assert!(!r.accepts_expected((ProducerId(10), ProducerEpoch(3))));
    }

    #[test]
    #[should_panic(expected = "illegal transaction transition")]
    fn commit_from_empty_is_a_programmer_error() {
        fresh().prepare_abort_or_commit(true, 0);
    }

    #[test]
    fn state_ids_round_trip() {
        for id in 0..8 {
            assert_eq!(TxnState::from_id(id).unwrap().id(), id);
        }
        assert_eq!(TxnState::from_id(8), None);
    }
}
