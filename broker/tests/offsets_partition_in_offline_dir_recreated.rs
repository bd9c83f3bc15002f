//! Bug: a `__consumer_offsets` partition whose data directory went offline while loading was
//! absent from the `LogManager`, so `GroupCoordinator::open` created it anew, empty, in the
//! other data directory: its groups' committed offsets were gone (OffsetFetch answered "no
//! offset", consumers reset their positions), and the next start, the directory repaired,
//! failed on the duplicate partition directories. Kafka never loads (nor recreates) an offsets
//! partition whose log dir is offline: its groups are answered NOT_COORDINATOR.

use crate::common;

use common::groups::{close, group_with_offsets_in};
use common::two_dir_logs;
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    GroupId, OffsetCommitRequest, OffsetFetchRequest, OffsetFetchResponse, RequestKind,
    ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn group_config() -> GroupConfig {
    GroupConfig {
        offsets_topic_partitions: 4,
        ..GroupConfig::default()
    }
}

fn commit(coord: &GroupCoordinator, group: &str, offset: i64) -> Vec<i16> {
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(s(""))
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(s("orders")))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(offset),
                ]),
        ]);
    match coord.handle(9, RequestKind::OffsetCommit(req)) {
        ResponseKind::OffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        other => panic!("{other:?}"),
    }
}

/// (group error, committed offset of orders-0).
fn fetch(coord: &GroupCoordinator, group: &str) -> (i16, Option<i64>) {
    let req = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(s(group)))
            .with_topics(Some(vec![
                OffsetFetchRequestTopics::default()
                    .with_name(TopicName(s("orders")))
                    .with_partition_indexes(vec![0]),
            ])),
    ]);
    let r: OffsetFetchResponse = match coord.handle(8, RequestKind::OffsetFetch(req)) {
        ResponseKind::OffsetFetch(r) => r,
        other => panic!("{other:?}"),
    };
    let g = &r.groups[0];
    let offset = g
        .topics
        .first()
        .and_then(|t| t.partitions.first())
        .map(|p| p.committed_offset);
    (g.error_code, offset)
}

#[test]
fn an_offsets_partition_in_an_offline_dir_is_not_created_again_elsewhere() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = Arc::new(SimStorage::new());
    let logs = two_dir_logs(d1.path(), d2.path(), &sim);
    let orders = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    logs.create(&orders, TopicId([1; 16]), LogConfig::default())
        .unwrap();
    let coord = GroupCoordinator::open(logs.clone(), group_config(), ManualClock::new(T0)).unwrap();
    // A group whose offsets partition lives in d2.
    let (group, offsets_tp) = group_with_offsets_in(&coord, &logs, d2.path());
    assert_eq!(commit(&coord, &group, 42), vec![0]);
    close(logs, coord);

    // Listing that offsets partition fails at the next start: d2 goes offline.
    let bad = d2.path().join(offsets_tp.to_string());
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let logs = two_dir_logs(d1.path(), d2.path(), &sim);
    assert!(logs.offline_dirs().iter().any(|(p, _)| p == d2.path()));
    let coord = GroupCoordinator::open(logs.clone(), group_config(), ManualClock::new(T0))
        .expect("the coordinator opens with one offsets partition offline");
    assert!(
        !d1.path().join(offsets_tp.to_string()).exists(),
        "{offsets_tp} was created again, empty, in the online dir"
    );
    assert_eq!(
        fetch(&coord, &group).0,
        E::NotCoordinator.code(),
        "the group's offsets are unavailable, not absent"
    );
    assert_eq!(commit(&coord, &group, 43), vec![E::NotCoordinator.code()]);
    close(logs, coord);

    // The disk works again: the offsets partition loads from d2 with the group's offset.
    let logs = two_dir_logs(d1.path(), d2.path(), &sim);
    assert!(logs.offline_dirs().is_empty());
    let coord = GroupCoordinator::open(logs.clone(), group_config(), ManualClock::new(T0)).unwrap();
    assert_eq!(fetch(&coord, &group), (0, Some(42)));
    close(logs, coord);
}
