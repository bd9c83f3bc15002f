//! Bug: a transaction's marker for a partition whose data directory was offline at start (the
//! partition exists, but its log was never loaded) was skipped as if the partition had been
//! deleted, and the transaction completed without it. Once the directory was repaired, the
//! partition held the transaction's records with no marker: an open transaction nobody would
//! end, its last stable offset stuck there, READ_COMMITTED consumers stalled for good. Kafka
//! drops markers only for partitions gone from the metadata; one without a leader waits for
//! one. Now the marker waits too: the transaction stays PrepareAbort (its producer gets
//! CONCURRENT_TRANSACTIONS) until a start with the directory repaired writes it.

use crate::common;

use common::two_dir_broker::{
    SplitTxn, TwoDirs, add_partition, close, init, lso_and_leo, produce_txn,
};
use kafka_protocol::ResponseError as E;

const T0: i64 = 1_700_000_000_000;

#[test]
fn a_timeout_abort_waits_for_the_partition_of_an_offline_dir() {
    let dirs = TwoDirs::new(T0);
    let b = dirs.open();
    let split = SplitTxn::new(&dirs, &b);
    let (bad, id, t_bad) = (&split.bad, split.txn_id.as_str(), &split.t_bad);

    // A transaction with a record in that partition, left open.
    let (err, pid, epoch) = init(&b, Some(id));
    assert_eq!(err, 0);
    assert_eq!(add_partition(&b, id, pid, epoch, t_bad), 0);
    assert_eq!(produce_txn(&b, id, (pid, epoch), T0, t_bad), 0);
    assert_eq!(lso_and_leo(&b, t_bad), (0, 1), "the transaction is open");
    close(b);

    // The partition's directory fails at the next start; the transaction times out there.
    split.fail_at_next_open(&dirs);
    let b = dirs.open();
    assert!(b.logs.offline_dirs().iter().any(|(p, _)| p == bad));
    dirs.clock.advance(61_000);
    b.tick();
    b.tick();
    // The abort is decided but its marker cannot be written: the transaction is not complete.
    assert_eq!(
        init(&b, Some(id)).0,
        E::ConcurrentTransactions.code(),
        "the abort completed without the marker of {t_bad}"
    );
    close(b);

    // Repaired: the start writes the marker, and the partition's transaction is closed.
    let b = dirs.open();
    assert!(b.logs.offline_dirs().is_empty());
    let (lso, leo) = lso_and_leo(&b, t_bad);
    assert_eq!(leo, 2, "the record and the ABORT marker");
    assert_eq!(lso, leo, "no transaction left open in {t_bad}");
    let (err, new_pid, new_epoch) = init(&b, Some(id));
    assert_eq!((err, new_pid), (0, pid));
    assert!(new_epoch > epoch + 1, "fenced by the abort, then bumped");
    close(b);
}
