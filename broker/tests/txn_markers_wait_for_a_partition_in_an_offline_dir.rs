//! Bug: a transaction's marker for a partition whose data directory was offline at start (the
//! partition exists, but its log was never loaded) was skipped as if the partition had been
//! deleted, and the transaction completed without it. Once the directory was repaired, the
//! partition held the transaction's records with no marker: an open transaction nobody would
//! end, its last stable offset stuck there, READ_COMMITTED consumers stalled for good. Kafka
//! drops markers only for partitions gone from the metadata; one without a leader waits for
//! one. Now the marker waits too: the transaction stays PrepareAbort (its producer gets
//! CONCURRENT_TRANSACTIONS) until a start with the directory repaired writes it.

mod common;

use common::two_dir_broker::{TwoDirs, add_partition, close, init, produce_txn, state_tp};
use kafka_protocol::ResponseError as E;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::txn::TxnConfig;
use mirrorlog_broker::txn::state_log::partition_for;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TopicPartition;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp};
use std::path::PathBuf;

const T0: i64 = 1_700_000_000_000;

fn dir_of(b: &Broker, tp: &TopicPartition) -> PathBuf {
    b.logs.get(tp).unwrap().data_dir().to_path_buf()
}

/// (last stable offset, log end offset) of `tp`.
fn lso_and_leo(b: &Broker, tp: &TopicPartition) -> (i64, i64) {
    let log = b.logs.get(tp).unwrap();
    let log = log.read();
    (log.last_stable_offset().get(), log.log_end_offset().get())
}

#[test]
fn a_timeout_abort_waits_for_the_partition_of_an_offline_dir() {
    let dirs = TwoDirs::new(T0);
    let b = dirs.open();
    b.topics
        .create(&b.logs, "t", 2, LogConfig::default(), None)
        .unwrap();
    // The directory to fail holds neither `__transaction_state-0` nor the id's state partition,
    // but one partition of `t`.
    let parts = TxnConfig::default().transaction_state_partitions;
    let good = dir_of(&b, &state_tp(0));
    let bad: PathBuf = if good == dirs.d1.path() {
        dirs.d2.path()
    } else {
        dirs.d1.path()
    }
    .into();
    let id = (0..1000)
        .map(|i| format!("tx-{i}"))
        .find(|id| dir_of(&b, &state_tp(partition_for(id, parts))) == good)
        .expect("an id whose state is in the good dir");
    let t_bad = (0..2)
        .map(|p| TopicPartition {
            topic: "t".into(),
            partition: p,
        })
        .find(|tp| dir_of(&b, tp) == bad)
        .expect("a partition of t in the dir that fails");

    // A transaction with a record in that partition, left open.
    let (err, pid, epoch) = init(&b, Some(&id));
    assert_eq!(err, 0);
    assert_eq!(add_partition(&b, &id, pid, epoch, &t_bad), 0);
    assert_eq!(produce_txn(&b, &id, (pid, epoch), T0, &t_bad), 0);
    assert_eq!(lso_and_leo(&b, &t_bad), (0, 1), "the transaction is open");
    close(b);

    // The partition's directory fails at the next start; the transaction times out there.
    let fault_path = bad.join(t_bad.to_string());
    dirs.sim
        .inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(fault_path.to_str().unwrap()));
    let b = dirs.open();
    assert!(b.logs.offline_dirs().iter().any(|(p, _)| *p == bad));
    dirs.clock.advance(61_000);
    b.tick();
    b.tick();
    // The abort is decided but its marker cannot be written: the transaction is not complete.
    assert_eq!(
        init(&b, Some(&id)).0,
        E::ConcurrentTransactions.code(),
        "the abort completed without the marker of {t_bad}"
    );
    close(b);

    // Repaired: the start writes the marker, and the partition's transaction is closed.
    let b = dirs.open();
    assert!(b.logs.offline_dirs().is_empty());
    let (lso, leo) = lso_and_leo(&b, &t_bad);
    assert_eq!(leo, 2, "the record and the ABORT marker");
    assert_eq!(lso, leo, "no transaction left open in {t_bad}");
    let (err, new_pid, new_epoch) = init(&b, Some(&id));
    assert_eq!((err, new_pid), (0, pid));
    assert!(new_epoch > epoch + 1, "fenced by the abort, then bumped");
    close(b);
}
