//! Scenario: transaction verification (KIP-890 part 1, on by default since Kafka 3.6) over the
//! wire. A transactional batch, or a TxnOffsetCommit, is written only if its partition is in
//! the producer's open transaction; otherwise it is refused with Kafka's codes and nothing is
//! written, so no write can open a transaction that no marker will ever end (which would hold
//! the last stable offset, and READ_COMMITTED consumers, back for good).

use bytes::Bytes;
use kafka_protocol::ResponseError;
use mirrorlog_broker::client::{Client, ClientError};
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs};
use mirrorlog_segment::BatchBuilder;

fn txn_batch(pid: i64, epoch: i16, seq: i32) -> Bytes {
    let mut b = BatchBuilder::new()
        .producer(ProducerId(pid), ProducerEpoch(epoch), Sequence(seq))
        .transactional(true);
    b.append(TimestampMs(1), None, Some(b"v"), &[]);
    b.build().into_bytes()
}

fn code<T: std::fmt::Debug>(r: Result<T, ClientError>) -> i16 {
    match r {
        Err(ClientError::Kafka { code, .. }) => code,
        other => panic!("expected a Kafka error, got {other:?}"),
    }
}

#[test]
fn transactional_writes_outside_the_open_transaction_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let rb = RunningBroker::start_local(dir.path(), 1).unwrap();
    let b = rb.broker.clone();
    b.topics
        .create(&b.logs, "t", 2, LogConfig::default(), None)
        .unwrap();
    let mut c = Client::connect(&rb.addr.to_string()).unwrap();
    let (pid, epoch) = c.init_producer_id(Some("tx")).unwrap();
    let invalid_txn_state = ResponseError::InvalidTxnState.code();
    let log_end = |p: i32| b.partition("t", p).unwrap().read().log_end_offset();
    let lso = |p: i32| b.partition("t", p).unwrap().read().last_stable_offset();

    // Not added to the transaction yet: refused at acks=1 and acks=all, nothing written.
    for acks in [1, -1] {
        let r = c.produce("t", 0, txn_batch(pid, epoch, 0), acks, Some("tx"));
        assert_eq!(code(r), invalid_txn_state, "acks={acks}");
    }
    assert_eq!(log_end(0), Offset(0));

    c.add_partitions_to_txn("tx", pid, epoch, "t", &[0])
        .unwrap();
    assert_eq!(
        c.produce("t", 0, txn_batch(pid, epoch, 0), -1, Some("tx"))
            .unwrap(),
        0
    );
    // Another partition of the same producer is still outside the transaction.
    let r = c.produce("t", 1, txn_batch(pid, epoch, 0), 1, Some("tx"));
    assert_eq!(code(r), invalid_txn_state);
    // Without a transactional id nothing can verify a transactional batch: refused as Kafka's
    // handleProduceRequest refuses it, even inside the open transaction.
    let auth = ResponseError::TransactionalIdAuthorizationFailed.code();
    let r = c.produce("t", 0, txn_batch(pid, epoch, 1), 1, None);
    assert_eq!(code(r), auth);
    let r = c.produce("t", 1, txn_batch(pid, epoch, 0), -1, None);
    assert_eq!(code(r), auth);
    assert_eq!((log_end(0), log_end(1)), (Offset(1), Offset(0)));
    assert_eq!(
        c.produce("t", 0, txn_batch(pid, epoch, 1), 1, Some("tx"))
            .unwrap(),
        1
    );
    // A fenced epoch and an unknown transactional id, as Kafka's ReplicaManager answers them.
    let r = c.produce("t", 0, txn_batch(pid, epoch + 1, 0), 1, Some("tx"));
    assert_eq!(code(r), ResponseError::InvalidProducerEpoch.code());
    let r = c.produce("t", 0, txn_batch(pid, epoch, 2), 1, Some("nobody"));
    assert_eq!(code(r), ResponseError::InvalidProducerIdMapping.code());

    // Offsets: refused until AddOffsetsToTxn put the group's partition in the transaction.
    let r = c.txn_offset_commit("tx", pid, epoch, "g", "t", &[(0, 5)]);
    assert_eq!(code(r), invalid_txn_state);
    c.add_offsets_to_txn("tx", pid, epoch, "g").unwrap();
    c.txn_offset_commit("tx", pid, epoch, "g", "t", &[(0, 5)])
        .unwrap();
    let r = c.txn_offset_commit("tx", pid, epoch + 1, "g", "t", &[(0, 6)]);
    assert_eq!(code(r), ResponseError::InvalidProducerEpoch.code());

    c.end_txn("tx", pid, epoch, true).unwrap();
    assert_eq!(c.fetch_offsets("g", "t", &[0]).unwrap(), vec![(0, 5)]);
    assert_eq!(lso(0), log_end(0), "the transaction is complete");

    // The transaction ended: its partitions are no longer in one, for batches and offsets.
    let end = log_end(0);
    let r = c.produce("t", 0, txn_batch(pid, epoch, 2), -1, Some("tx"));
    assert_eq!(code(r), invalid_txn_state);
    let r = c.txn_offset_commit("tx", pid, epoch, "g", "t", &[(0, 9)]);
    assert_eq!(code(r), invalid_txn_state);
    assert_eq!(log_end(0), end);
    assert_eq!(lso(0), end, "no transaction was left open");
    assert_eq!(c.fetch_offsets("g", "t", &[0]).unwrap(), vec![(0, 5)]);

    drop((c, b));
    rb.shutdown().unwrap();
}
