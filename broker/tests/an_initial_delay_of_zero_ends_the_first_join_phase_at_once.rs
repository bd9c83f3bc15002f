//! With `group.initial.rebalance.delay.ms` 0 (the default here), a new group's first join
//! phase ends at once with the members that have joined, as Kafka's: its coordinator schedules
//! the initial-delay timer at 0 ms too (`InitialDelayedJoin`, the new coordinator's
//! `tryCompleteInitialRebalanceElseSchedule`), which fires at once and ends the phase whoever
//! is still MEMBER_ID_REQUIRED. Here the phase waited for those members to join (until their
//! sessions or the rebalance timeout ended).
//!
//! No time passes: the clock is manual and never ticked; the parked JoinGroup runs on its own
//! thread and the state is read once its join was handled.

use crate::common;

use common::groups::{consumer_join_req, join, logs_with, recv, spawn_join, wait_for};
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::*;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_engine::clock::ManualClock;

const T0: i64 = 1_700_000_000_000;
const GROUP: &str = "at-once";

fn join_req(member: &str) -> JoinGroupRequest {
    consumer_join_req(GROUP, member, None, 10_000)
}

#[test]
fn an_initial_delay_of_zero_ends_the_first_join_phase_without_the_member_id_required_members() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let logs = logs_with(dir.path(), clock.clone(), &[("orders", 1, 1)]);
    let config = GroupConfig::default();
    assert_eq!(config.group_initial_rebalance_delay_ms, 0);
    let coord = GroupCoordinator::open(logs, config, clock).unwrap();

    // A and B both get their member ids; only A joins with it.
    let a = join(&coord, join_req(""));
    assert_eq!(a.error_code, E::MemberIdRequired.code());
    let a_id = a.member_id.to_string();
    let b = join(&coord, join_req(""));
    assert_eq!(b.error_code, E::MemberIdRequired.code());
    let parked_a = spawn_join(&coord, join_req(&a_id));
    wait_for(&coord, GROUP, "A's join handled", |g| {
        g.awaiting_join == 1 || g.generation_id == 1
    });

    let snap = coord.group_snapshot(GROUP).unwrap();
    assert_eq!(
        (snap.state, snap.generation_id, snap.pending_members),
        ("CompletingRebalance", 1, 1),
        "the first join phase ends at once, B still MEMBER_ID_REQUIRED"
    );
    let r = recv(&parked_a);
    assert_eq!(
        (r.error_code, r.generation_id, r.leader.as_str()),
        (0, 1, a_id.as_str())
    );
    assert_eq!(r.members.len(), 1);

    // B joining later makes a second generation, which A rejoins.
    let b_id = b.member_id.to_string();
    let parked_b = spawn_join(&coord, join_req(&b_id));
    wait_for(&coord, GROUP, "B parked", |g| g.awaiting_join == 1);
    let parked_a = spawn_join(&coord, join_req(&a_id));
    let (ra, rb) = (recv(&parked_a), recv(&parked_b));
    assert_eq!((ra.error_code, ra.generation_id), (0, 2));
    assert_eq!((rb.error_code, rb.generation_id), (0, 2));
    let leader = if ra.leader == ra.member_id { &ra } else { &rb };
    assert_eq!(leader.members.len(), 2);
}
