//! Kafka checks `acks` in `ReplicaManager.appendRecords`, after `KafkaApis.handleProduceRequest`
//! has answered the partitions it does not have (`UNKNOWN_TOPIC_OR_PARTITION`) and those whose
//! records fail `ProduceRequest.validateRecords` (`INVALID_RECORD`): only the partitions that
//! would be appended are answered `INVALID_REQUIRED_ACKS`. mirrorlog answered every partition
//! `INVALID_REQUIRED_ACKS`, hiding a missing topic behind a bad setting.

use crate::common;

use bytes::Bytes;
use common::produce::{answered, batch, request, running_with_topic, send};

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_REQUIRED_ACKS: i16 = 21;
const INVALID_RECORD: i16 = 87;

#[test]
fn invalid_acks_is_answered_only_for_partitions_that_would_be_appended() {
    let dir = tempfile::tempdir().unwrap();
    let running = running_with_topic(dir.path(), "t", 2);
    let b = &running.broker;

    let r = request(
        2,
        vec![
            ("t", 0, Some(batch(b"v"))),
            ("t", 1, Some(Bytes::new())),
            ("t", 7, Some(batch(b"v"))),
            ("missing", 0, Some(batch(b"v"))),
        ],
    );
    let resp = send(running.addr, 9, &r);
    assert_eq!(
        answered(&resp),
        vec![
            ("t".to_string(), 0, INVALID_REQUIRED_ACKS),
            ("t".to_string(), 1, INVALID_RECORD),
            ("t".to_string(), 7, UNKNOWN_TOPIC_OR_PARTITION),
            ("missing".to_string(), 0, UNKNOWN_TOPIC_OR_PARTITION),
        ]
    );
    assert_eq!(
        b.partition("t", 0).unwrap().read().log_end_offset().get(),
        0
    );
    running.shutdown().unwrap();
}
