//! Bug: OffsetDelete of a partition the broker does not have (a topic it does not hold, or an
//! index beyond the topic's partitions) answered no error, and deleted the group's offset for it
//! if the group had one (offsets kept in `__consumer_offsets` for a topic no longer here).
//! Kafka's `KafkaApis.handleOffsetDeleteRequest` answers such a partition
//! UNKNOWN_TOPIC_OR_PARTITION and does not hand it to the group coordinator, so its offset
//! stays; a group error (no such group) still answers the whole request, with no partitions.

use crate::common;

use common::groups::{commit, delete, fetch, logs_with};
use kafka_protocol::ResponseError as E;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_index::TopicPartition;

#[test]
fn an_unknown_topic_or_partition_is_answered_unknown_and_keeps_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let logs = logs_with(
        dir.path(),
        clock.clone(),
        &[("orders", 2, 1), ("gone", 1, 2)],
    );
    let c = GroupCoordinator::open(logs.clone(), GroupConfig::default(), clock).unwrap();
    commit(
        &c,
        "g",
        &[("orders", 0, 10), ("orders", 1, 11), ("gone", 0, 5)],
    );
    // The partition leaves the engine without the coordinator being told: the group keeps an
    // offset for a topic the broker no longer has.
    let gone = TopicPartition {
        topic: "gone".into(),
        partition: 0,
    };
    logs.delete(&gone).unwrap();

    let unknown = E::UnknownTopicOrPartition.code();
    let (error, partitions) = delete(
        &c,
        "g",
        &[("gone", &[0]), ("orders", &[0, 2]), ("nowhere", &[3])],
    );
    assert_eq!(error, 0);
    assert_eq!(
        partitions,
        [
            ("gone".to_string(), 0, unknown),
            ("orders".to_string(), 0, 0),
            ("orders".to_string(), 2, unknown),
            ("nowhere".to_string(), 3, unknown),
        ]
    );
    assert_eq!(
        fetch(&c, "g", &[("gone", 0), ("orders", 0), ("orders", 1)]),
        [5, -1, 11],
        "only the known partition's offset is deleted"
    );

    // The group's own error answers the whole request, unknown partitions or not.
    assert_eq!(
        delete(&c, "nope", &[("gone", &[0]), ("orders", &[1])]),
        (E::GroupIdNotFound.code(), vec![])
    );
}
