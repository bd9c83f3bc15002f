//! A group stored with more members than `group.max.size` now allows (the limit was lowered
//! across a restart) rebalances as soon as it is loaded, as Kafka's `onLoaded` does: its members
//! rejoin and the one beyond the limit is refused with GROUP_MAX_SIZE_REACHED and dropped. It
//! used to come back Stable and stay over the limit for good, since a known member is always
//! accepted back into a Stable group.
//!
//! Three static members join during the initial rebalance delay (so that one join phase takes
//! them all); the manual clock ends the delay. Parked JoinGroups run on their own threads; the
//! test waits for the state it needs (a bounded wait that only fails on a hang).

use crate::common;

use bytes::Bytes;
use common::groups::{HANG, join, logs_with, recv, spawn_join, wait_for};
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_engine::clock::{Clock, ManualClock};
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_segment::io::default_storage;
use std::sync::Arc;
use std::time::Instant;

const T0: i64 = 1_700_000_000_000;
const GROUP: &str = "capped";

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn join_req(member: &str, instance: &str) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(30_000)
        .with_member_id(s(member))
        .with_group_instance_id(Some(s(instance)))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(s("range"))
                .with_metadata(Bytes::from_static(b"sub")),
        ])
}

fn sync(c: &GroupCoordinator, member: &str, instance: &str, assignments: &[String]) -> i16 {
    let req = SyncGroupRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_generation_id(1)
        .with_member_id(s(member))
        .with_group_instance_id(Some(s(instance)))
        .with_assignments(
            assignments
                .iter()
                .map(|m| {
                    SyncGroupRequestAssignment::default()
                        .with_member_id(s(m))
                        .with_assignment(Bytes::from_static(b"parts"))
                })
                .collect(),
        );
    match c.handle(5, RequestKind::SyncGroup(req)) {
        ResponseKind::SyncGroup(r) => r.error_code,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_group_loaded_over_group_max_size_rebalances_and_drops_the_member_beyond_it() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let logs = logs_with(dir.path(), clock.clone(), &[("orders", 1, 1)]);
    let config = GroupConfig {
        group_initial_rebalance_delay_ms: 1000,
        ..GroupConfig::default()
    };
    let coord = GroupCoordinator::open(logs.clone(), config.clone(), clock.clone()).unwrap();
    let instances = ["i-1", "i-2", "i-3"];
    let parked: Vec<_> = instances
        .iter()
        .map(|i| spawn_join(&coord, join_req("", i)))
        .collect();
    wait_for(&coord, GROUP, "three parked joins", |g| {
        g.awaiting_join == 3
    });
    // The initial delay ends (extended once: members arrived during it).
    let start = Instant::now();
    while coord.group_snapshot(GROUP).unwrap().state != "CompletingRebalance" {
        assert!(start.elapsed() < HANG, "the join phase never ended");
        clock.advance(1000);
        coord.tick(clock.now_ms());
    }
    let joined: Vec<JoinGroupResponse> = parked.iter().map(recv).collect();
    let ids: Vec<String> = joined.iter().map(|r| r.member_id.to_string()).collect();
    assert!(
        joined
            .iter()
            .all(|r| r.error_code == 0 && r.generation_id == 1)
    );
    let leader = joined[0].leader.to_string();
    let li = ids.iter().position(|id| *id == leader).unwrap();
    assert_eq!(sync(&coord, &leader, instances[li], &ids), 0);
    for (id, i) in ids.iter().zip(instances) {
        assert_eq!(sync(&coord, id, i, &[]), 0);
    }
    let snap = coord.group_snapshot(GROUP).unwrap();
    assert_eq!(
        (snap.state, snap.generation_id, snap.members.len()),
        ("Stable", 1, 3)
    );

    // Restart with a limit of two members.
    drop(coord);
    Arc::try_unwrap(logs).unwrap().shutdown().unwrap();
    let (logs, _) = LogManager::open(
        LogManagerConfig::new(dir.path()),
        default_storage(),
        clock.clone(),
    )
    .unwrap();
    let logs = Arc::new(logs);
    let capped = GroupConfig {
        group_max_size: 2,
        ..config
    };
    let coord = GroupCoordinator::open(logs.clone(), capped, clock.clone()).unwrap();
    let snap = coord.group_snapshot(GROUP).unwrap();
    assert_eq!(
        (snap.state, snap.generation_id, snap.members.len()),
        ("PreparingRebalance", 1, 3),
        "a group over group.max.size rebalances once loaded"
    );
    // Two members rejoin; the third is one too many, refused and dropped, and the join phase
    // completes with the two.
    let first: Vec<_> = (0..2)
        .map(|n| spawn_join(&coord, join_req(&ids[n], instances[n])))
        .collect();
    wait_for(&coord, GROUP, "two parked rejoins", |g| {
        g.awaiting_join == 2
    });
    let refused = join(&coord, join_req(&ids[2], instances[2]));
    assert_eq!(refused.error_code, E::GroupMaxSizeReached.code());
    for r in first.iter().map(recv) {
        assert_eq!((r.error_code, r.generation_id), (0, 2));
    }
    let snap = coord.group_snapshot(GROUP).unwrap();
    assert_eq!(snap.members.len(), 2);
    assert!(!snap.members.contains(&ids[2]));
    drop(coord);
    Arc::try_unwrap(logs).unwrap().shutdown().unwrap();
}
