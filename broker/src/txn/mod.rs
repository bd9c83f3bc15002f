//! The transaction coordinator, and producer-id allocation.
//!
//! Kafka's `TransactionCoordinator` on one node: InitProducerId (idempotent and transactional
//! producers), AddPartitionsToTxn, AddOffsetsToTxn and EndTxn, the timeout abort and the
//! expiration of idle transactional ids, with the state of every transactional id kept in
//! `__transaction_state` in Kafka's record format ([`state_log`]).
//!
//! ## Bird's-eye view
//!
//! - Each transactional id has its [`TxnMetadata`] in memory behind its own lock. A request
//!   computes the next state on a copy ([`state`]), writes it durably to the id's
//!   `__transaction_state` partition (`abs(javaHash(id)) % partitions`), and only then
//!   installs it: a failed write changes nothing.
//! - EndTxn writes PrepareCommit/PrepareAbort, then the COMMIT/ABORT control batch
//!   (`BatchBuilder::end_txn_marker`, stamped with this incarnation's coordinator epoch) to
//!   every partition of the transaction through the engine's coordinator append, then tells
//!   the group coordinator ([`TxnOffsetsSink::complete_txn`]) when offsets were added, then
//!   writes CompleteCommit/CompleteAbort. Markers are written synchronously (several
//!   partitions in parallel), not by a background sender as in Kafka. Markers that fail are
//!   retried by [`TxnCoordinator::tick`] (only the partitions still missing one, with an
//!   exponential backoff from 0.1 s up to 10 s, the failure warned about once) and, since the
//!   engine refuses writes to a partition whose write failed until it is reopened, by the next
//!   [`TxnCoordinator::open`].
//! - After every append the partition's high watermark is moved to its log end (one node).
//! - Producer ids come from blocks of `producer_id_block_size`; the block end and the
//!   coordinator epoch live in one mirrorlog record in `__transaction_state` partition 0, so ids
//!   stay unique across restarts and each incarnation's markers carry a higher coordinator
//!   epoch than the last.
//! - [`TxnCoordinator::open`] replays `__transaction_state`, and completes any transaction
//!   that was PrepareCommit/PrepareAbort when the broker stopped (its markers are written
//!   again; a repeated marker is harmless). A partition whose data directory is offline at open
//!   is left unloaded, never created anew: its transactional ids answer NOT_COORDINATOR
//!   (FindCoordinator COORDINATOR_NOT_AVAILABLE) until a restart loads it; with partition 0
//!   (coordinator epoch, producer-id blocks) offline the whole coordinator is unavailable.
//!
//! ## Code map
//!
//! - `coordinator.rs`: [`TxnCoordinator`]: open/load, the typed operations, markers, `tick`;
//! - `api.rs`: the wire requests and responses, per-version error codes;
//! - [`state`]: states and transitions; [`state_log`]: the bytes of `__transaction_state`;
//! - [`config`], [`error`].
//!
//! ## Invariants
//!
//! - A state is in memory only once it is durable in `__transaction_state`.
//! - A marker is written only after its Prepare record is durable; Complete is written only
//!   after every marker is durable (or its partition is gone).
//! - Transaction verification (KIP-890 part 1, on by default since Kafka 3.6): a transactional
//!   Produce batch, or a TxnOffsetCommit, is written only if its partition is in the
//!   producer's open transaction, and under that transaction's lock
//!   ([`TxnVerifier`], [`TxnCoordinator::run_verified`]), so the transaction cannot end
//!   between the check and the write: no write ever opens a transaction nobody will end.
//! - The epoch handed to a producer only grows for a producer id; fencing bumps it first.
//!
//! ## Limits
//!
//! - EndTxn v5 (KIP-890 transactions v2) is not implemented: EndTxn is advertised up to v4.
//! - No log compaction: `__transaction_state` never expires by retention; instead `tick`
//!   rewrites a partition's live records and raises its log start past the old ones.
//! - Kafka answers an InitProducerId that had to abort an open transaction with
//!   CONCURRENT_TRANSACTIONS and lets the producer retry; mirrorlog completes the abort
//!   synchronously and answers what the retry would get.

mod api;
pub mod config;
mod coordinator;
pub mod error;
pub mod state;
pub mod state_log;

pub use config::TxnConfig;
pub use coordinator::TxnCoordinator;
pub use error::TxnError;
pub use state::{TxnMetadata, TxnState};

use mirrorlog_index::{ProducerEpoch, ProducerId, TopicPartition};

/// What the transaction coordinator needs from the group coordinator: where a group's offsets
/// live, and the end of a transaction that committed offsets with TxnOffsetCommit.
pub trait TxnOffsetsSink: Send + Sync {
    /// The `__consumer_offsets` partition of `group_id` (its marker goes there).
    fn partition_for(&self, group_id: &str) -> i32;

    /// The transaction of `producer_id` ended and its marker is durable in every partition of
    /// the transaction, the group's `__consumer_offsets` partition included: make the offsets
    /// it staged visible (`commit`) or drop them. `producer_epoch` is the marker's epoch, which
    /// is above the epoch the offsets were staged with when the transaction was fenced or timed
    /// out: match staged offsets on the producer id. Called once per transaction, and again for
    /// the same transaction after a crash or a failed completion (it must be idempotent).
    /// Called with the transactional id's lock held: it must not call back into the
    /// transaction coordinator. `partitions` are the transaction's `__consumer_offsets`
    /// partitions (each has its marker): offsets staged in any other stay staged, as they do
    /// when that partition is replayed, which finds no marker there.
    fn complete_txn(&self, producer_id: i64, producer_epoch: i16, commit: bool, partitions: &[i32]);
}

/// Verification of transactional writes (KIP-890 part 1), as the produce path and the group
/// coordinator ask for it; implemented by [`TxnCoordinator`].
pub trait TxnVerifier: Send + Sync {
    /// Runs `write` if `tp` is in the open transaction of `transactional_id` under
    /// (`producer_id`, `producer_epoch`), with the transaction unable to end meanwhile; see
    /// [`TxnCoordinator::run_verified`].
    ///
    /// # Errors
    /// As [`TxnCoordinator::run_verified`]; `write` has not run.
    fn run_verified(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        tp: &TopicPartition,
        write: &mut dyn FnMut(),
    ) -> Result<(), TxnError>;
}

impl TxnVerifier for TxnCoordinator {
    fn run_verified(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        tp: &TopicPartition,
        write: &mut dyn FnMut(),
    ) -> Result<(), TxnError> {
        TxnCoordinator::run_verified(
            self,
            transactional_id,
            ProducerId(producer_id),
            ProducerEpoch(producer_epoch),
            tp,
            write,
        )
    }
}

/// [`TxnVerifier::run_verified`] for a write that returns something.
///
/// # Errors
/// As [`TxnCoordinator::run_verified`]; `write` has not run.
pub fn verified<R>(
    verifier: &dyn TxnVerifier,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    tp: &TopicPartition,
    write: impl FnOnce() -> R,
) -> Result<R, TxnError> {
    let mut write = Some(write);
    let mut out = None;
    verifier.run_verified(
        transactional_id,
        producer_id,
        producer_epoch,
        tp,
        &mut || out = write.take().map(|w| w()),
    )?;
    out.ok_or_else(|| TxnError::Internal("the verified write did not run".to_string()))
}
