//! OffsetDelete (API 47, what the Java AdminClient's `deleteConsumerGroupOffsets` sends), on the
//! group coordinator over a real engine: the asked partitions' offsets are tombstoned in
//! `__consumer_offsets` (gone after a reload too), a partition without an offset is answered
//! without error, an unknown group is GROUP_ID_NOT_FOUND and an empty id INVALID_GROUP_ID. (A
//! topic the group's members subscribe to answers GROUP_SUBSCRIBED_TO_TOPIC: see
//! `tests/java_admin_groups.rs`, where a real consumer holds the subscription.)

use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_segment::io::default_storage;
use std::sync::Arc;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// An admin-style commit (generation −1, no member), as `alterConsumerGroupOffsets` sends.
fn commit(c: &GroupCoordinator, group: &str, offsets: &[(&str, i32, i64)]) {
    let topics = offsets
        .iter()
        .map(|(t, p, o)| {
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(s(t)))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(*p)
                        .with_committed_offset(*o),
                ])
        })
        .collect();
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(topics);
    match c.handle(9, RequestKind::OffsetCommit(req)) {
        ResponseKind::OffsetCommit(r) => {
            for t in &r.topics {
                for p in &t.partitions {
                    assert_eq!(p.error_code, 0, "{r:?}");
                }
            }
        }
        other => panic!("{other:?}"),
    }
}

/// The group's committed offsets of `parts` (−1: none).
fn fetch(c: &GroupCoordinator, group: &str, parts: &[(&str, i32)]) -> Vec<i64> {
    let topics = parts
        .iter()
        .map(|(t, p)| {
            OffsetFetchRequestTopics::default()
                .with_name(TopicName(s(t)))
                .with_partition_indexes(vec![*p])
        })
        .collect();
    let req = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(s(group)))
            .with_topics(Some(topics)),
    ]);
    match c.handle(8, RequestKind::OffsetFetch(req)) {
        ResponseKind::OffsetFetch(r) => r.groups[0]
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.committed_offset))
            .collect(),
        other => panic!("{other:?}"),
    }
}

/// OffsetDelete: (top-level error, [(topic, partition, error)]).
fn delete(
    c: &GroupCoordinator,
    group: &str,
    topics: &[(&str, &[i32])],
) -> (i16, Vec<(String, i32, i16)>) {
    let req = OffsetDeleteRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(
            topics
                .iter()
                .map(|(t, ps)| {
                    OffsetDeleteRequestTopic::default()
                        .with_name(TopicName(s(t)))
                        .with_partitions(
                            ps.iter()
                                .map(|p| {
                                    OffsetDeleteRequestPartition::default().with_partition_index(*p)
                                })
                                .collect(),
                        )
                })
                .collect(),
        );
    match c.handle(0, RequestKind::OffsetDelete(req)) {
        ResponseKind::OffsetDelete(r) => (
            r.error_code,
            r.topics
                .iter()
                .flat_map(|t| {
                    t.partitions
                        .iter()
                        .map(|p| (t.name.0.to_string(), p.partition_index, p.error_code))
                })
                .collect(),
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn offset_delete_tombstones_the_asked_offsets_of_a_group_without_members() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let (logs, _) = LogManager::open(
        LogManagerConfig::new(dir.path()),
        default_storage(),
        clock.clone(),
    )
    .unwrap();
    let logs = Arc::new(logs);
    for (topic, n, id) in [("orders", 4, 1u8), ("payments", 1, 2)] {
        for partition in 0..n {
            let tp = TopicPartition {
                topic: topic.into(),
                partition,
            };
            logs.create(&tp, TopicId([id; 16]), LogConfig::default())
                .unwrap();
        }
    }
    let c = GroupCoordinator::open(logs.clone(), GroupConfig::default(), clock.clone()).unwrap();
    commit(
        &c,
        "g",
        &[("orders", 0, 10), ("orders", 1, 11), ("payments", 0, 20)],
    );

    let (error, partitions) = delete(&c, "g", &[("orders", &[0, 3]), ("payments", &[0])]);
    assert_eq!(error, 0);
    assert_eq!(
        partitions,
        [
            ("orders".to_string(), 0, 0),
            ("orders".to_string(), 3, 0),
            ("payments".to_string(), 0, 0)
        ],
        "a partition without an offset is no error"
    );
    let asked = [("orders", 0), ("orders", 1), ("payments", 0)];
    assert_eq!(fetch(&c, "g", &asked), [-1, 11, -1]);

    assert_eq!(
        delete(&c, "nope", &[("orders", &[0])]).0,
        E::GroupIdNotFound.code()
    );
    assert_eq!(
        delete(&c, "", &[("orders", &[0])]).0,
        E::InvalidGroupId.code()
    );

    // The tombstones are in `__consumer_offsets`: a coordinator loading it again agrees.
    drop(c);
    let c = GroupCoordinator::open(logs, GroupConfig::default(), clock).unwrap();
    assert_eq!(fetch(&c, "g", &asked), [-1, 11, -1]);
}
