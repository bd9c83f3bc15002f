//! OffsetFetch with a group-level error (here NOT_COORDINATOR: the group's `__consumer_offsets`
//! partition sits in an offline data directory) is answered as Kafka's
//! `OffsetFetchResponse.groupError` answers it, per version: v1 has no top-level error code, so
//! each asked partition carries the error (offset −1, no metadata); v2–v7 carry the error alone,
//! with no partitions; v8+ carry it per group, with no partitions. v2–v7 used to list the asked
//! partitions too (offset −1, no error), which read as "nothing committed" to a client that
//! looks at partitions before the top-level error.

use crate::common;

use common::groups::{close, group_with_offsets_in};
use common::two_dir_logs;
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    GroupId, OffsetFetchRequest, OffsetFetchResponse, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn fetch(coord: &GroupCoordinator, v: i16, group: &str) -> OffsetFetchResponse {
    let req = if v < 8 {
        OffsetFetchRequest::default()
            .with_group_id(GroupId(s(group)))
            .with_topics(Some(vec![
                OffsetFetchRequestTopic::default()
                    .with_name(TopicName(s("orders")))
                    .with_partition_indexes(vec![0, 1]),
            ]))
    } else {
        OffsetFetchRequest::default().with_groups(vec![
            OffsetFetchRequestGroup::default()
                .with_group_id(GroupId(s(group)))
                .with_topics(Some(vec![
                    OffsetFetchRequestTopics::default()
                        .with_name(TopicName(s("orders")))
                        .with_partition_indexes(vec![0, 1]),
                ])),
        ])
    };
    match coord.handle(v, RequestKind::OffsetFetch(req)) {
        ResponseKind::OffsetFetch(r) => r,
        other => panic!("{other:?}"),
    }
}

#[test]
fn offset_fetch_with_a_group_error_is_answered_as_kafka_per_version() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = Arc::new(SimStorage::new());
    let config = GroupConfig {
        offsets_topic_partitions: 4,
        ..GroupConfig::default()
    };
    let clock = ManualClock::new(T0);
    let logs = two_dir_logs(d1.path(), d2.path(), &sim);
    let coord = GroupCoordinator::open(logs.clone(), config.clone(), clock.clone()).unwrap();
    // A group whose offsets partition lives in d2.
    let (group, offsets_tp) = group_with_offsets_in(&coord, &logs, d2.path());
    close(logs, coord);
    // Listing that offsets partition fails at the next start: d2 goes offline.
    let bad = d2.path().join(offsets_tp.to_string());
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let logs = two_dir_logs(d1.path(), d2.path(), &sim);
    let coord = GroupCoordinator::open(logs.clone(), config, clock).unwrap();
    let not_coordinator = E::NotCoordinator.code();

    // v1: no top-level error code; each asked partition carries it.
    let r = fetch(&coord, 1, &group);
    let parts: Vec<(i32, i64, i16, Option<String>)> = r
        .topics
        .iter()
        .inspect(|t| assert_eq!(t.name.as_str(), "orders"))
        .flat_map(|t| &t.partitions)
        .map(|p| {
            (
                p.partition_index,
                p.committed_offset,
                p.error_code,
                p.metadata.as_ref().map(|m| m.to_string()),
            )
        })
        .collect();
    assert_eq!(
        parts,
        vec![
            (0, -1, not_coordinator, Some(String::new())),
            (1, -1, not_coordinator, Some(String::new())),
        ],
        "v1 puts the group's error in every asked partition"
    );

    // v2–v7: the error alone.
    for v in 2..=7 {
        let r = fetch(&coord, v, &group);
        assert_eq!(r.error_code, not_coordinator, "v{v}");
        assert!(
            r.topics.is_empty(),
            "v{v} answers the group-level error alone, no partitions: {:?}",
            r.topics
        );
    }

    // v8+: per group, the error alone.
    for v in 8..=9 {
        let r = fetch(&coord, v, &group);
        assert_eq!(r.groups.len(), 1);
        assert_eq!(r.groups[0].error_code, not_coordinator, "v{v}");
        assert!(r.groups[0].topics.is_empty(), "v{v}: {:?}", r.groups[0]);
    }
    close(logs, coord);
}
