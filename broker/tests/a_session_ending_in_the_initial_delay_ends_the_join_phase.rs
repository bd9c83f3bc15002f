//! A session that ends during the initial rebalance delay (`group.initial.rebalance.delay.ms`)
//! ends the join phase at once when every member left has joined, as Kafka's
//! `removeMemberAndUpdateClassicGroup` and `removePendingMemberAndUpdateClassicGroup` do (they
//! check no delay; only a join or a LeaveGroup waits for it, through `maybeCompleteJoinPhase`).
//! Here the join phase waited for the delay to end: the members already parked were answered
//! later, and a member arriving meanwhile made one generation with them where Kafka's has made
//! a second.
//!
//! The manual clock moves the sessions and the delay; parked JoinGroups run on their own
//! threads, and the state is read right after the tick that ends the session.

use crate::common;

use common::groups::{consumer_join_req, join, logs_with, recv, spawn_join, wait_for};
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::*;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_engine::clock::{Clock, ManualClock};
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000;
const GROUP: &str = "delayed";

fn join_req(member: &str, instance: Option<&str>, session_ms: i32) -> JoinGroupRequest {
    consumer_join_req(GROUP, member, instance, session_ms)
}

fn coordinator(
    config: GroupConfig,
) -> (tempfile::TempDir, Arc<ManualClock>, Arc<GroupCoordinator>) {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let logs = logs_with(dir.path(), clock.clone(), &[("orders", 1, 1)]);
    let coord = GroupCoordinator::open(logs, config, clock.clone()).unwrap();
    (dir, clock, coord)
}

#[test]
fn a_member_id_required_members_session_ending_in_the_initial_delay_ends_the_join_phase() {
    let (_dir, clock, coord) = coordinator(GroupConfig {
        group_initial_rebalance_delay_ms: 20_000,
        ..GroupConfig::default()
    });
    // A gets its member id and joins: the initial delay (20 s) starts.
    let a = join(&coord, join_req("", None, 10_000));
    assert_eq!(a.error_code, E::MemberIdRequired.code());
    let a_id = a.member_id.to_string();
    let parked_a = spawn_join(&coord, join_req(&a_id, None, 10_000));
    wait_for(&coord, GROUP, "A parked", |g| g.awaiting_join == 1);
    // B gets its member id (a 10 s session) and never joins with it.
    let b = join(&coord, join_req("", None, 10_000));
    assert_eq!(b.error_code, E::MemberIdRequired.code());
    let snap = coord.group_snapshot(GROUP).unwrap();
    assert_eq!(
        (snap.state, snap.pending_members),
        ("PreparingRebalance", 1)
    );

    // B's session ends 10 s in, halfway through the delay: A is every member left, and has
    // joined, so the join phase ends now.
    clock.advance(10_000);
    coord.tick(clock.now_ms());
    let snap = coord.group_snapshot(GROUP).unwrap();
    assert_eq!(
        (snap.state, snap.generation_id, snap.pending_members),
        ("CompletingRebalance", 1, 0),
        "the join phase ends when the pending member's session does, not with the delay"
    );
    let r = recv(&parked_a);
    assert_eq!(
        (r.error_code, r.generation_id, r.leader.as_str()),
        (0, 1, a_id.as_str())
    );
    assert_eq!(r.members.len(), 1);
}

#[test]
fn a_new_members_join_timeout_ending_in_the_initial_delay_ends_the_join_phase() {
    let (_dir, clock, coord) = coordinator(GroupConfig {
        group_initial_rebalance_delay_ms: 60_000,
        group_new_member_join_timeout_ms: 30_000,
        ..GroupConfig::default()
    });
    // Static members (no MEMBER_ID_REQUIRED): A joins at 0 s, B at 10 s; both stay parked.
    let parked_a = spawn_join(&coord, join_req("", Some("i-a"), 10_000));
    wait_for(&coord, GROUP, "A parked", |g| g.awaiting_join == 1);
    clock.advance(10_000);
    let parked_b = spawn_join(&coord, join_req("", Some("i-b"), 10_000));
    wait_for(&coord, GROUP, "B parked", |g| g.awaiting_join == 2);

    // 30 s in (the delay runs to 60 s), A's new-member join timeout ends: A is dropped and B,
    // every member left, has joined, so the join phase ends now with B alone.
    clock.advance(20_000);
    coord.tick(clock.now_ms());
    let snap = coord.group_snapshot(GROUP).unwrap();
    assert_eq!(
        (snap.state, snap.generation_id, snap.members.len()),
        ("CompletingRebalance", 1, 1),
        "the join phase ends when A's join timeout does, not with the delay"
    );
    assert_eq!(recv(&parked_a).error_code, E::UnknownMemberId.code());
    let r = recv(&parked_b);
    assert_eq!((r.error_code, r.generation_id), (0, 1));
    assert_eq!(r.leader, r.member_id);
    assert_eq!(r.members.len(), 1);
}
