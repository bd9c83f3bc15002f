//! Bug: a segment's `.txnindex` whose last entry names an offset past the log (a damaged file,
//! or one a crash left ahead of its `.log` under a clean-shutdown marker) passed the open's
//! checks, and the next ABORT marker appended below that offset panicked on the index's order
//! assertion: one bad file took the whole process down. Kafka's `TransactionIndex.sanityCheck`
//! checks only entries below the segment start (Kafka appends such a marker after it, out of
//! order). Now the open checks the last entry against the log, as it checks the time index's,
//! and rebuilds the segment's indexes when it names an offset the log does not hold.

use crate::common;

use common::*;
use mirrorlog_engine::log::Shutdown;
use mirrorlog_index::{AbortedTxn, LeaderEpoch, Offset, ProducerId};
use std::io::Write;

#[test]
fn an_aborted_txn_entry_past_the_log_is_rebuilt_and_the_next_abort_is_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    for (batch, origin) in aborted_txn() {
        log.append_as_leader(batch, LeaderEpoch(0), origin).unwrap();
    }
    assert_eq!(log.log_end_offset(), Offset(3));
    log.close().unwrap();

    // A damaged entry after the real one: an abort "at" offset 1000, past the log end.
    let forged = AbortedTxn {
        producer_id: ProducerId(7),
        first_offset: Offset(900),
        last_offset: Offset(1000),
        last_stable_offset: Offset(900),
    };
    let path = dir.path().join(format!("{:020}.txnindex", 0));
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(&forged.encode())
        .unwrap();

    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    // Producer 2's transaction aborted at offset 5: below the forged entry's 1000.
    log.append_as_leader(
        producer_batch(2, 0, 0, 2, true, T0),
        LeaderEpoch(0),
        mirrorlog_engine::log::LeaderOrigin::Client,
    )
    .unwrap();
    log.append_as_leader(
        marker(2, 0, false, T0),
        LeaderEpoch(0),
        mirrorlog_engine::log::LeaderOrigin::Coordinator,
    )
    .unwrap();
    assert_eq!(log.log_end_offset(), Offset(6));
    let aborted = read_committed_aborted(&mut log, Offset(6)).expect("READ_COMMITTED lists");
    let producers: Vec<i64> = aborted.iter().map(|t| t.producer_id.get()).collect();
    assert_eq!(
        producers,
        vec![1, 2],
        "both real aborts listed, the forged one gone"
    );
}
