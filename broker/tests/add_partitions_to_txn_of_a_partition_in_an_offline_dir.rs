//! Bug: AddPartitionsToTxn answered UNKNOWN_TOPIC_OR_PARTITION for a partition whose data
//! directory was offline at start (its log never loaded), as if the topic did not exist, and
//! the other partitions of the request OPERATION_NOT_ATTEMPTED. Kafka's `KafkaApis` refuses
//! only partitions missing from the metadata; the partition exists there (Metadata lists it,
//! offline), so Kafka adds it and lets the Produce to it fail (KAFKA_STORAGE_ERROR). Now it is
//! added too, and the EndTxn that follows behaves: the transaction's marker for that partition
//! waits for the directory (the transaction stays Prepare*, its producer gets
//! CONCURRENT_TRANSACTIONS) and a start with the directory repaired writes it.

use crate::common;

use common::two_dir_broker::{
    SplitTxn, TwoDirs, add_partition, close, end_txn, init, lso_and_leo, produce_txn,
};
use kafka_protocol::ResponseError as E;

const T0: i64 = 1_700_000_000_000;

#[test]
fn a_partition_of_an_offline_dir_joins_the_transaction_and_its_marker_waits() {
    let dirs = TwoDirs::new(T0);
    let b = dirs.open();
    let split = SplitTxn::new(&dirs, &b);
    let (id, t_bad) = (split.txn_id.as_str(), &split.t_bad);
    close(b);

    split.fail_at_next_open(&dirs);
    let b = dirs.open();
    assert!(b.logs.offline_dirs().iter().any(|(p, _)| *p == split.bad));
    let (err, pid, epoch) = init(&b, Some(id));
    assert_eq!(err, 0);
    assert_eq!(
        add_partition(&b, id, pid, epoch, t_bad),
        0,
        "{t_bad} exists (in an offline directory): Kafka adds it to the transaction"
    );
    assert_eq!(
        produce_txn(&b, id, (pid, epoch), T0, t_bad),
        E::KafkaStorageError.code(),
        "the Produce is what fails"
    );
    // The commit is decided; its marker for the offline partition waits.
    assert_eq!(end_txn(&b, id, pid, epoch), 0);
    for _ in 0..3 {
        dirs.clock.advance(1_000);
        b.tick();
    }
    assert_eq!(
        init(&b, Some(id)).0,
        E::ConcurrentTransactions.code(),
        "the commit completed without the marker of {t_bad}"
    );
    close(b);

    // Repaired: the start writes the marker, and the transaction completes.
    let b = dirs.open();
    assert!(b.logs.offline_dirs().is_empty());
    assert_eq!(lso_and_leo(&b, t_bad), (1, 1), "the COMMIT marker alone");
    let (err, new_pid, new_epoch) = init(&b, Some(id));
    assert_eq!((err, new_pid, new_epoch), (0, pid, epoch + 1));
    close(b);
}
