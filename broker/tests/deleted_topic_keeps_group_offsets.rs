//! Kafka's group coordinator drops the committed offsets of deleted partitions
//! (`GroupCoordinator.onPartitionsDeleted`, called when a topic deletion is published). A topic
//! deleted and created again under the same name is a new topic (new id, offsets from 0): a
//! group must not resume it at an offset committed for the old one, which would silently skip
//! the new topic's first records.

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
fn deleting_a_topic_forgets_its_committed_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let rb = RunningBroker::start_local(dir.path(), 1).unwrap();
    let mut c = Client::connect(&rb.addr.to_string()).unwrap();
    c.create_topic("t", 1, &[]).unwrap();
    for _ in 0..5 {
        c.produce("t", 0, batch(), -1, None).unwrap();
    }
    c.commit_offsets("g", "t", &[(0, 5, -1)]).unwrap();
    assert_eq!(c.fetch_offsets("g", "t", &[0]).unwrap(), vec![(0, 5)]);

    c.delete_topic("t").unwrap();
    c.create_topic("t", 1, &[]).unwrap();
    for _ in 0..10 {
        c.produce("t", 0, batch(), -1, None).unwrap();
    }
    // Kafka: no committed offset (−1), so the consumer applies auto.offset.reset and reads the
    // new topic from its start. Offset 5 would skip the new topic's first five records.
    assert_eq!(
        c.fetch_offsets("g", "t", &[0]).unwrap(),
        vec![(0, -1)],
        "the offset committed for the deleted topic survived its deletion"
    );
    drop(c);
    rb.shutdown().unwrap();

    // And after a restart (the coordinator reloads `__consumer_offsets`).
    let rb = RunningBroker::start_local(dir.path(), 1).unwrap();
    let mut c = Client::connect(&rb.addr.to_string()).unwrap();
    assert_eq!(
        c.fetch_offsets("g", "t", &[0]).unwrap(),
        vec![(0, -1)],
        "the deleted topic's offset came back from __consumer_offsets"
    );
    drop(c);
    rb.shutdown().unwrap();
}
