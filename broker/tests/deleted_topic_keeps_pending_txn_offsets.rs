//! Kafka's `GroupMetadata.removeOffsets` (called by `onPartitionsDeleted` when a topic is
//! deleted) drops a deleted partition's committed offsets *and* its pending transactional
//! offsets. Here only the committed ones go: offsets a TxnOffsetCommit staged for the topic
//! before it was deleted become committed when the transaction commits, and a topic created
//! again under the same name is resumed at an offset committed for the old one.

use bytes::Bytes;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::BatchBuilder;

fn batch() -> Bytes {
    let mut b = BatchBuilder::new();
    b.append(TimestampMs(1), None, Some(b"v"), &[]);
    b.build().into_bytes()
}

#[test]
fn deleting_a_topic_forgets_its_pending_transactional_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let rb = RunningBroker::start_local(dir.path(), 1).unwrap();
    let mut c = Client::connect(&rb.addr.to_string()).unwrap();
    c.create_topic("t", 1, &[]).unwrap();
    for _ in 0..5 {
        c.produce("t", 0, batch(), -1, None).unwrap();
    }
    let (pid, epoch) = c.init_producer_id(Some("tx")).unwrap();
    c.add_offsets_to_txn("tx", pid, epoch, "g").unwrap();
    c.txn_offset_commit("tx", pid, epoch, "g", "t", &[(0, 5)])
        .unwrap();

    c.delete_topic("t").unwrap();
    c.end_txn("tx", pid, epoch, true).unwrap();
    c.create_topic("t", 1, &[]).unwrap();
    // Kafka: nothing committed for the new topic (−1); 5 would skip its first five records.
    assert_eq!(
        c.fetch_offsets("g", "t", &[0]).unwrap(),
        vec![(0, -1)],
        "an offset staged in a transaction for the deleted topic survived its deletion"
    );
    drop(c);
    rb.shutdown().unwrap();
}
