//! Scenario: a follower truncates into the middle of a transaction (its leader changed). The
//! transaction is open again after the truncation (its marker is gone), the transaction index
//! loses the abort that was cut off, and re-appending the marker completes it again.

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset};

#[test]
fn truncating_into_a_transaction_reopens_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    let e = LeaderEpoch(0);
    log.append_as_leader(
        producer_batch(5, 0, 0, 3, true, T0),
        e,
        LeaderOrigin::Client,
    )
    .unwrap(); // 0..2
    log.append_as_leader(
        producer_batch(5, 0, 3, 3, true, T0),
        e,
        LeaderOrigin::Client,
    )
    .unwrap(); // 3..5
    log.append_as_leader(marker(5, 0, false, T0), e, LeaderOrigin::Coordinator)
        .unwrap(); // 6
    log.producer_state();
    log.update_high_watermark(Offset(7));
    assert_eq!(log.last_stable_offset(), Offset(7));
    assert_eq!(
        log.collect_aborted_txns(Offset(0), Offset(7))
            .unwrap()
            .len(),
        1
    );
    log.truncate_to(Offset(4)).unwrap();
    assert_eq!(log.log_end_offset(), Offset(3), "batch 3..5 goes whole");
    assert_eq!(
        log.collect_aborted_txns(Offset(0), Offset(7))
            .unwrap()
            .len(),
        0
    );
    log.update_high_watermark(Offset(3));
    assert_eq!(
        log.last_stable_offset(),
        Offset(0),
        "the transaction is open again"
    );
    log.append_as_leader(marker(5, 0, false, T0), e, LeaderOrigin::Coordinator)
        .unwrap(); // 3
    log.update_high_watermark(Offset(4));
    assert_eq!(log.last_stable_offset(), Offset(4));
    let aborted = log.collect_aborted_txns(Offset(0), Offset(4)).unwrap();
    assert_eq!(
        (aborted[0].first_offset, aborted[0].last_offset),
        (Offset(0), Offset(3))
    );
}
