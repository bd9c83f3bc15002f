//! Scenario: a producer's transaction is open at epoch 0 when an unverified transactional batch
//! (no transactional id, `LeaderOrigin::ClientUnverified`) arrives at epoch 1. Kafka's log takes
//! an unverified batch only into a transaction open at its own epoch (`hasOngoingTransaction`):
//! a newer epoch means the coordinator is ending that transaction, and the batch would be
//! committed or aborted with records it never belonged to. It is refused `INVALID_TXN_STATE`;
//! a batch at an older epoch is still `INVALID_PRODUCER_EPOCH`.

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_engine::producer_state::ProducerStateError;
use mirrorlog_index::{LeaderEpoch, Offset};

#[test]
fn an_unverified_batch_at_a_newer_epoch_does_not_join_the_open_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    let e = LeaderEpoch(0);
    let unverified = LeaderOrigin::ClientUnverified;
    log.append_as_leader(
        producer_batch(7, 0, 0, 2, true, T0),
        e,
        LeaderOrigin::Client,
    )
    .unwrap();

    let newer = log.append_as_leader(producer_batch(7, 1, 0, 2, true, T0), e, unverified);
    assert!(
        matches!(
            newer,
            Err(EngineError::ProducerState(
                ProducerStateError::InvalidTxnState { .. }
            ))
        ),
        "{newer:?}"
    );
    assert_eq!(log.log_end_offset(), Offset(2), "nothing appended");
    let entry = log.producer_state().entry(mirrorlog_index::ProducerId(7));
    assert_eq!(
        entry.unwrap().producer_epoch,
        mirrorlog_index::ProducerEpoch(0)
    );

    // The open transaction at its own epoch still takes unverified batches.
    let more = log
        .append_as_leader(producer_batch(7, 0, 2, 1, true, T0), e, unverified)
        .unwrap();
    assert_eq!(more.first_offset, Offset(2));

    // A verified batch at epoch 1 takes the producer's epoch forward; an unverified one at the
    // old epoch is then fenced as a stale epoch, as Kafka checks that first.
    log.append_as_leader(
        producer_batch(7, 1, 0, 1, true, T0),
        e,
        LeaderOrigin::Client,
    )
    .unwrap();
    let stale = log.append_as_leader(producer_batch(7, 0, 3, 1, true, T0), e, unverified);
    assert!(
        matches!(
            stale,
            Err(EngineError::ProducerState(
                ProducerStateError::InvalidProducerEpoch { .. }
            ))
        ),
        "{stale:?}"
    );
}
