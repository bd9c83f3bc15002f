//! Kafka reads a ListOffsets or Fetch request's isolation level with `IsolationLevel.forId`,
//! which throws for anything but 0 and 1; `KafkaApis.handle` then answers the request's
//! `getErrorResponse` with `UNKNOWN_SERVER_ERROR`: ListOffsets in every partition it names,
//! Fetch at the top level (and before v13 in every partition it names too). ListOffsets reads
//! the level whatever the replica id; Fetch reads it (`FetchIsolation.of`) only once a
//! partition its metadata holds is to be read. Here ListOffsets answered `INVALID_REQUEST` per
//! partition, and Fetch read such a request as READ_UNCOMMITTED.

use crate::common;

use common::fetch_session::{broker_with, by_topic_id, fetch_at, produce_one, session_fetch};
use common::long_poll::one_record;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{BrokerId, ListOffsetsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::BrokerConfig;
use mirrorlog_broker::handlers::offsets;

const UNKNOWN_SERVER_ERROR: i16 = -1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

/// A ListOffsets of the latest offset of each of `parts` (topic, partition) at `isolation`.
fn list_latest(parts: &[(&str, i32)], isolation: i8) -> ListOffsetsRequest {
    let mut r = ListOffsetsRequest::default();
    r.replica_id = BrokerId(-1);
    r.isolation_level = isolation;
    for &(topic, partition) in parts {
        let mut p = ListOffsetsPartition::default();
        p.partition_index = partition;
        p.timestamp = offsets::LATEST_TIMESTAMP;
        let mut t = ListOffsetsTopic::default();
        t.name = TopicName(StrBytes::from_string(topic.to_string()));
        t.partitions.push(p);
        r.topics.push(t);
    }
    r
}

/// (topic, partition, error, offset, timestamp) of every partition a ListOffsets answer lists.
fn listed_offsets(
    r: ListOffsetsRequest,
    b: &mirrorlog_broker::broker::Broker,
) -> Vec<(String, i32, i16, i64, i64)> {
    offsets::list_offsets(b, r, 8)
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    t.name.0.to_string(),
                    p.partition_index,
                    p.error_code,
                    p.offset,
                    p.timestamp,
                )
            })
        })
        .collect()
}

#[test]
fn list_offsets_at_isolation_level_2_fails_every_partition_unknown_server_error() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _) = broker_with(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        &[("t", 1)],
    );
    produce_one(&b, "t", one_record());
    let failed = |topic: &str| (topic.to_string(), 0, UNKNOWN_SERVER_ERROR, -1, -1);

    let r = list_latest(&[("t", 0), ("nope", 0), ("t", 0)], 2);
    assert_eq!(
        listed_offsets(r, &b),
        [failed("t"), failed("nope"), failed("t")]
    );
    // A replica's request reads the level too.
    let mut r = list_latest(&[("t", 0)], 2);
    r.replica_id = BrokerId(1);
    assert_eq!(listed_offsets(r, &b), [failed("t")]);
    // Levels 0 and 1 still answer.
    for isolation in [0, 1] {
        let r = list_latest(&[("t", 0)], isolation);
        assert_eq!(listed_offsets(r, &b), [("t".to_string(), 0, 0, 1, -1)]);
    }
}

#[test]
fn fetch_at_isolation_level_2_fails_the_whole_request_once_a_partition_is_known() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _) = broker_with(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        &[("t", 1)],
    );
    produce_one(&b, "t", one_record());

    // Before v13: the top-level error and every named partition with it, offsets -1.
    let mut r = session_fetch(0, -1, &[("t", 0, 0), ("nope", 0, 0)]);
    r.isolation_level = 2;
    let resp = fetch_at(&b, r, 12);
    assert_eq!(resp.error_code, UNKNOWN_SERVER_ERROR);
    let parts: Vec<_> = resp
        .responses
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    t.topic.0.to_string(),
                    p.error_code,
                    p.high_watermark,
                    p.records.as_ref().map_or(0, |r| r.len()),
                )
            })
        })
        .collect();
    assert_eq!(
        parts,
        [
            ("t".to_string(), UNKNOWN_SERVER_ERROR, -1, 0),
            ("nope".to_string(), UNKNOWN_SERVER_ERROR, -1, 0)
        ]
    );

    // v13+: the top-level error alone, with the request's session id.
    let mut r = by_topic_id(&b, session_fetch(0, -1, &[("t", 0, 0)]));
    r.isolation_level = 2;
    let resp = fetch_at(&b, r, 13);
    assert_eq!(resp.error_code, UNKNOWN_SERVER_ERROR);
    assert!(resp.responses.is_empty(), "{resp:?}");
    assert_eq!(resp.session_id, 0);

    // A replica's fetch reads the level too.
    let mut r = session_fetch(0, -1, &[("t", 0, 0)]);
    r.isolation_level = 2;
    r.replica_id = BrokerId(1);
    assert_eq!(fetch_at(&b, r, 12).error_code, UNKNOWN_SERVER_ERROR);

    // No partition the broker holds: the level is never read, each partition answers its own
    // error.
    let mut r = session_fetch(0, -1, &[("nope", 0, 0), ("t", 1, 0)]);
    r.isolation_level = 2;
    let resp = fetch_at(&b, r, 12);
    assert_eq!(resp.error_code, 0);
    let codes: Vec<i16> = resp
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect();
    assert_eq!(codes, [UNKNOWN_TOPIC_OR_PARTITION; 2]);
}
