//! Scenario: a transactional batch the broker could not verify with the transaction coordinator
//! (a Produce request without a transactional id, KIP-890 part 1) may continue the producer's
//! open transaction but never open one — otherwise a zombie could start a transaction no marker
//! will ever end, and the last stable offset would stop there for good.

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_engine::producer_state::ProducerStateError;
use mirrorlog_index::{LeaderEpoch, Offset};

fn is_invalid_txn_state<T: std::fmt::Debug>(r: &Result<T, EngineError>) -> bool {
    matches!(
        r,
        Err(EngineError::ProducerState(
            ProducerStateError::InvalidTxnState { .. }
        ))
    )
}

#[test]
fn an_unverified_transactional_batch_may_continue_but_not_open_a_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    let e = LeaderEpoch(0);
    let unverified = LeaderOrigin::ClientUnverified;

    let opened = log.append_as_leader(producer_batch(7, 0, 0, 2, true, T0), e, unverified);
    assert!(is_invalid_txn_state(&opened), "{opened:?}");
    assert_eq!(log.log_end_offset(), Offset(0), "nothing appended");
    assert_eq!(log.last_stable_offset(), Offset(0));

    // A verified batch opens the transaction; unverified ones may continue it.
    log.append_as_leader(
        producer_batch(7, 0, 0, 2, true, T0),
        e,
        LeaderOrigin::Client,
    )
    .unwrap();
    let more = log
        .append_as_leader(producer_batch(7, 0, 2, 2, true, T0), e, unverified)
        .unwrap();
    assert_eq!(more.first_offset, Offset(2));
    // A retry of the opening batch is still recognised as a duplicate.
    let dup = log
        .append_as_leader(producer_batch(7, 0, 0, 2, true, T0), e, unverified)
        .unwrap();
    assert!(dup.duplicate);
    assert_eq!(dup.first_offset, Offset(0));

    // Once the marker ends the transaction, an unverified batch cannot open the next one.
    log.append_as_leader(marker(7, 0, true, T0), e, LeaderOrigin::Coordinator)
        .unwrap();
    let end = log.log_end_offset();
    let reopened = log.append_as_leader(producer_batch(7, 0, 4, 1, true, T0), e, unverified);
    assert!(is_invalid_txn_state(&reopened), "{reopened:?}");
    assert_eq!(log.log_end_offset(), end);

    // Non-transactional batches are not affected.
    let plain = log
        .append_as_leader(producer_batch(8, 0, 0, 1, false, T0), e, unverified)
        .unwrap();
    assert_eq!(plain.first_offset, end);
}
