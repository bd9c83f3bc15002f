//! Scenario: the broker dies with transactions open and one aborted. After unclean recovery the
//! open transactions still pin the last stable offset, the aborted one is in the transaction
//! index (rebuilt from the log), and completing the open ones moves the LSO on.

use crate::common;

use common::*;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin, OpenOffsets, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset, ProducerId};

#[test]
fn open_transactions_survive_an_unclean_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut log = open(dir.path(), small_config(), clock.clone(), Shutdown::Clean);
    let e = LeaderEpoch(0);
    log.append_as_leader(client_batch(2, T0), e, LeaderOrigin::Client)
        .unwrap(); // 0..1
    log.append_as_leader(
        producer_batch(1, 0, 0, 2, true, T0),
        e,
        LeaderOrigin::Client,
    )
    .unwrap(); // 2..3
    log.append_as_leader(
        producer_batch(2, 0, 0, 2, true, T0),
        e,
        LeaderOrigin::Client,
    )
    .unwrap(); // 4..5
    log.append_as_leader(marker(2, 0, false, T0), e, LeaderOrigin::Coordinator)
        .unwrap(); // 6 abort
    log.append_as_leader(
        producer_batch(3, 0, 0, 1, true, T0),
        e,
        LeaderOrigin::Client,
    )
    .unwrap(); // 7
    log.update_high_watermark(Offset(8));
    assert_eq!(log.last_stable_offset(), Offset(2));
    log.flush().unwrap();
    drop(log); // no close(): no snapshot at the end, no clean marker
    let offsets = OpenOffsets {
        high_watermark: Offset(8),
        ..Default::default()
    };
    let (mut log, _) = reopen_unclean(dir.path(), clock, offsets);
    assert_eq!(log.high_watermark(), Offset(8));
    assert_eq!(log.last_stable_offset(), Offset(2));
    let aborted = log.collect_aborted_txns(Offset(0), Offset(8)).unwrap();
    assert_eq!(aborted.len(), 1);
    assert_eq!(
        (
            aborted[0].producer_id,
            aborted[0].first_offset,
            aborted[0].last_offset
        ),
        (ProducerId(2), Offset(4), Offset(6))
    );
    log.append_as_leader(marker(1, 0, true, T0), e, LeaderOrigin::Coordinator)
        .unwrap(); // 8
    log.update_high_watermark(Offset(9));
    assert_eq!(
        log.last_stable_offset(),
        Offset(7),
        "producer 3's transaction is still open"
    );
    log.append_as_leader(marker(3, 0, true, T0), e, LeaderOrigin::Coordinator)
        .unwrap(); // 9
    log.update_high_watermark(Offset(10));
    assert_eq!(log.last_stable_offset(), Offset(10));
    let r = log
        .read(Offset(0), 1 << 20, FetchIsolation::TxnCommitted, false)
        .unwrap();
    assert_eq!(r.aborted_transactions.unwrap().len(), 1);
}
