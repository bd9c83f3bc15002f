//! A READ_COMMITTED read stops at the last stable offset, but the aborted transactions it lists
//! reach up to Kafka's `fetchUpperBoundOffset` of the bytes returned (the first offset-index
//! entry at or after their end, else the next segment's base offset, else the log end offset),
//! which is not bounded by the LSO (`LocalLog.addAbortedTransactions`). The engine took the
//! smaller of that bound and the LSO, so an abort that began after an open transaction's first
//! offset was left out of the list Kafka sends.

use crate::common;

use common::*;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset, ProducerId};

#[test]
fn an_abort_after_the_lso_is_listed_up_to_the_log_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    let e = LeaderEpoch(0);
    // 0: a plain batch; 1: producer 1 opens a transaction (the LSO stays there); 2..3: producer
    // 2's transaction, aborted at 4.
    log.append_as_leader(client_batch(1, T0), e, LeaderOrigin::Client)
        .unwrap();
    log.append_as_leader(
        producer_batch(1, 0, 0, 1, true, T0),
        e,
        LeaderOrigin::Client,
    )
    .unwrap();
    log.append_as_leader(
        producer_batch(2, 0, 0, 2, true, T0),
        e,
        LeaderOrigin::Client,
    )
    .unwrap();
    log.append_as_leader(marker(2, 0, false, T0), e, LeaderOrigin::Coordinator)
        .unwrap();
    log.update_high_watermark(Offset(5));
    assert_eq!(log.last_stable_offset(), Offset(1));

    let r = log
        .read(Offset(0), 1 << 20, FetchIsolation::TxnCommitted, true)
        .unwrap();
    assert!(r.records.is_some(), "offset 0 is below the LSO");
    let aborted = r.aborted_transactions.unwrap();
    // No index entry after the bytes read (one segment): the bound is the log end offset, 5.
    assert_eq!(
        aborted
            .iter()
            .map(|t| (t.producer_id, t.first_offset, t.last_offset))
            .collect::<Vec<_>>(),
        vec![(ProducerId(2), Offset(2), Offset(4))],
        "Kafka lists producer 2's abort (first offset 2 < the bound 5)"
    );
}
