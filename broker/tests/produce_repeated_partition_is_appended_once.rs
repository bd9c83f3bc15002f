//! Kafka's `KafkaApis.handleProduceRequest` keys the partitions to append by topic-partition
//! (`authorizedRequestInfo` is a map), so a partition named twice in one Produce request is
//! appended once, with the records of its last entry, and answered once. mirrorlog appended
//! both entries' batches and answered the partition twice.

use crate::common;

use common::produce::{answered, batch, request, running_with_topic, send};
use mirrorlog_engine::log::FetchIsolation;
use mirrorlog_index::Offset;

#[test]
fn a_partition_named_twice_is_appended_once_and_answered_once() {
    let dir = tempfile::tempdir().unwrap();
    let running = running_with_topic(dir.path(), "t", 2);
    let b = &running.broker;

    // t-0 twice (the second entry under a topic entry of its own), t-1 between them.
    let r = request(
        1,
        vec![
            ("t", 0, Some(batch(b"first"))),
            ("t", 1, Some(batch(b"other"))),
            ("u", 0, Some(batch(b"unknown topic"))),
            ("t", 0, Some(batch(b"last"))),
        ],
    );
    let resp = send(running.addr, 9, &r);
    assert_eq!(
        answered(&resp),
        vec![
            ("t".to_string(), 0, 0),
            ("t".to_string(), 1, 0),
            ("u".to_string(), 0, 3),
        ],
        "each partition answered once, each topic once"
    );
    let log_end = |p: i32| b.partition("t", p).unwrap().read().log_end_offset().get();
    assert_eq!(log_end(0), 1, "t-0 appended once");
    assert_eq!(log_end(1), 1);
    // The batch appended is the last entry's.
    let h = b.partition("t", 0).unwrap();
    let info = h
        .read()
        .read(Offset(0), 1 << 20, FetchIsolation::LogEnd, true)
        .unwrap();
    let bytes = info.records.unwrap().slice.read_all().unwrap();
    assert!(bytes.windows(4).any(|w| w == b"last"));
    assert!(!bytes.windows(5).any(|w| w == b"first"));
    drop(h);
    running.shutdown().unwrap();
}
