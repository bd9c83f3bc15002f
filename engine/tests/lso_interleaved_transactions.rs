//! Scenario: three producers' transactions interleave. The last stable offset follows the
//! earliest undecided transaction, never passes the high watermark, and READ_COMMITTED reads stop
//! at it and carry the aborted transactions of their range.

use crate::common;

use common::*;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset, ProducerId};

#[test]
fn the_lso_follows_the_earliest_undecided_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    let e = LeaderEpoch(0);
    let mut lead = |b| log.append_as_leader(b, e, LeaderOrigin::Client).unwrap();
    lead(producer_batch(1, 0, 0, 1, true, T0)); // 0  A
    lead(producer_batch(2, 0, 0, 1, true, T0)); // 1  B
    lead(producer_batch(3, 0, 0, 1, true, T0)); // 2  C
    lead(producer_batch(2, 0, 1, 1, true, T0)); // 3  B
    let mut coord = |b| {
        log.append_as_leader(b, e, LeaderOrigin::Coordinator)
            .unwrap()
    };
    coord(marker(2, 0, false, T0)); // 4  B aborts
    coord(marker(1, 0, true, T0)); // 5  A commits
    log.update_high_watermark(Offset(3));
    assert_eq!(log.last_stable_offset(), Offset(0));
    log.update_high_watermark(Offset(6));
    // A and B are decided and replicated; C (offset 2) is open.
    assert_eq!(log.last_stable_offset(), Offset(2));
    let r = log
        .read(Offset(0), 1 << 20, FetchIsolation::TxnCommitted, false)
        .unwrap();
    assert_eq!(r.last_stable_offset, Offset(2));
    let aborted = r.aborted_transactions.unwrap();
    assert_eq!(aborted.len(), 1);
    assert_eq!(
        (
            aborted[0].producer_id,
            aborted[0].first_offset,
            aborted[0].last_offset
        ),
        (ProducerId(2), Offset(1), Offset(4))
    );
    // Kafka records the LSO at the time of the abort: C's start.
    assert_eq!(aborted[0].last_stable_offset, Offset(0));
    let bytes = r.records.unwrap().slice.read_all().unwrap();
    let last = mirrorlog_segment::batch::Batches::new(bytes)
        .map(|b| b.unwrap().last_offset())
        .last()
        .unwrap();
    assert_eq!(last, Offset(1), "READ_COMMITTED stops before the LSO");
    log.append_as_leader(marker(3, 0, true, T0), e, LeaderOrigin::Coordinator)
        .unwrap(); // 6
    assert_eq!(log.last_stable_offset(), Offset(2), "not yet replicated");
    log.update_high_watermark(Offset(7));
    assert_eq!(log.last_stable_offset(), Offset(7));
}
