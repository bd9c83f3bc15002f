//! The classic group coordinator driven through `handle()` with kafka-protocol request structs,
//! from several threads, on a real engine in a temporary directory, with a manual clock: time
//! moves only when a test moves it, and `tick()` runs only when a test calls it. Parked
//! JoinGroup/SyncGroup requests run on their own threads; a test waits for the state it needs
//! through `group_snapshot()` (a bounded wait that only fails on a hang), never on elapsed time.

use bytes::Bytes;
use crossbeam_channel::Receiver;
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    ApiKey, DeleteGroupsRequest, DescribeGroupsRequest, DescribeGroupsResponse, GroupId,
    HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse,
    ListGroupsRequest, OffsetCommitRequest, OffsetFetchRequest, OffsetFetchResponse, ProducerId,
    RequestKind, ResponseKind, SyncGroupRequest, SyncGroupResponse, TopicName, TransactionalId,
    TxnOffsetCommitRequest,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::group::{
    ClientInfo, GroupConfig, GroupCoordinator, OFFSETS_TOPIC, offsets_topic_id,
};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, ProducerEpoch, TimestampMs, TopicId, TopicPartition};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::default_storage;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const T0: i64 = 1_700_000_000_000;
const SESSION_MS: i32 = 10_000;
const REBALANCE_MS: i32 = 30_000;
/// How long a test waits for a thread before declaring a hang.
const HANG: Duration = Duration::from_secs(20);

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn gid(v: &str) -> GroupId {
    GroupId(s(v))
}

struct Broker {
    clock: Arc<ManualClock>,
    logs: Arc<LogManager>,
    coord: Arc<GroupCoordinator>,
}

fn open_logs(dir: &Path, clock: &Arc<ManualClock>) -> Arc<LogManager> {
    let (logs, _) =
        LogManager::open(LogManagerConfig::new(dir), default_storage(), clock.clone()).unwrap();
    Arc::new(logs)
}

/// A broker on `dir` with topics `orders` (4 partitions) and `payments` (1).
fn open(dir: &Path, clock: &Arc<ManualClock>, config: GroupConfig) -> Broker {
    let logs = open_logs(dir, clock);
    for (topic, n, id) in [("orders", 4, 1u8), ("payments", 1, 2)] {
        for p in 0..n {
            let tp = TopicPartition {
                topic: topic.into(),
                partition: p,
            };
            logs.create(&tp, TopicId([id; 16]), LogConfig::default())
                .unwrap();
        }
    }
    let coord = GroupCoordinator::open(logs.clone(), config, clock.clone()).unwrap();
    Broker {
        clock: clock.clone(),
        logs,
        coord,
    }
}

fn broker(config: GroupConfig) -> (tempfile::TempDir, Broker) {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let b = open(dir.path(), &clock, config);
    (dir, b)
}

impl Broker {
    fn now(&self) -> i64 {
        use mirrorlog_engine::clock::Clock;
        self.clock.now_ms()
    }

    /// Moves the clock and runs the ticker once.
    fn advance(&self, ms: i64) {
        self.clock.advance(ms);
        self.coord.tick(self.now());
    }

    /// Waits until the group's snapshot satisfies `f`.
    fn wait_for(
        &self,
        group: &str,
        what: &str,
        f: impl Fn(&mirrorlog_broker::group::GroupSnapshot) -> bool,
    ) {
        let start = Instant::now();
        loop {
            if let Some(snap) = self.coord.group_snapshot(group)
                && f(&snap)
            {
                return;
            }
            assert!(
                start.elapsed() < HANG,
                "waiting for {what}: {:?}",
                self.coord.group_snapshot(group)
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Closes the coordinator and the log manager (cleanly) and opens both again.
    fn reopen(self, dir: &Path, config: GroupConfig) -> Broker {
        let Broker { clock, logs, coord } = self;
        drop(coord);
        Arc::try_unwrap(logs)
            .expect("no other user of the log manager")
            .shutdown()
            .unwrap();
        let logs = open_logs(dir, &clock);
        let coord = GroupCoordinator::open(logs.clone(), config, clock.clone()).unwrap();
        Broker { clock, logs, coord }
    }
}

fn protocols(list: &[(&str, &str)]) -> Vec<JoinGroupRequestProtocol> {
    list.iter()
        .map(|(n, m)| {
            JoinGroupRequestProtocol::default()
                .with_name(s(n))
                .with_metadata(Bytes::from(m.to_string()))
        })
        .collect()
}

fn join_req(group: &str, member: &str, instance: Option<&str>) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(gid(group))
        .with_session_timeout_ms(SESSION_MS)
        .with_rebalance_timeout_ms(REBALANCE_MS)
        .with_member_id(s(member))
        .with_group_instance_id(instance.map(s))
        .with_protocol_type(s("consumer"))
        .with_protocols(protocols(&[
            ("range", &format!("sub-{member}")),
            ("roundrobin", "rr"),
        ]))
}

fn join(c: &GroupCoordinator, v: i16, req: JoinGroupRequest) -> JoinGroupResponse {
    let client = ClientInfo {
        client_id: "app".into(),
        client_host: "/127.0.0.1".into(),
    };
    match c.handle_from(&client, v, RequestKind::JoinGroup(req)) {
        ResponseKind::JoinGroup(r) => r,
        other => panic!("{other:?}"),
    }
}

/// Runs `f` on its own thread; its result comes through the receiver.
fn spawn<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Receiver<T> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx
}

fn recv<T>(rx: &Receiver<T>) -> T {
    rx.recv_timeout(HANG)
        .expect("the request should have completed")
}

/// A JoinGroup on its own thread.
fn spawn_join(
    b: &Broker,
    group: &str,
    member: &str,
    instance: Option<&str>,
) -> Receiver<JoinGroupResponse> {
    let c = b.coord.clone();
    let req = join_req(group, member, instance);
    spawn(move || join(&c, 9, req))
}

/// A new member's first JoinGroup (v9): MEMBER_ID_REQUIRED with its id.
fn member_id(b: &Broker, group: &str) -> String {
    let r = join(&b.coord, 9, join_req(group, "", None));
    assert_eq!(r.error_code, E::MemberIdRequired.code());
    assert!(r.member_id.starts_with("app-"), "{}", r.member_id.as_str());
    r.member_id.to_string()
}

fn sync_req(
    group: &str,
    member: &str,
    generation: i32,
    assignments: &[(&str, &str)],
) -> SyncGroupRequest {
    SyncGroupRequest::default()
        .with_group_id(gid(group))
        .with_generation_id(generation)
        .with_member_id(s(member))
        .with_protocol_type(Some(s("consumer")))
        .with_assignments(
            assignments
                .iter()
                .map(|(m, a)| {
                    SyncGroupRequestAssignment::default()
                        .with_member_id(s(m))
                        .with_assignment(Bytes::from(a.to_string()))
                })
                .collect(),
        )
}

fn sync(c: &GroupCoordinator, req: SyncGroupRequest) -> SyncGroupResponse {
    match c.handle(5, RequestKind::SyncGroup(req)) {
        ResponseKind::SyncGroup(r) => r,
        other => panic!("{other:?}"),
    }
}

fn spawn_sync(b: &Broker, req: SyncGroupRequest) -> Receiver<SyncGroupResponse> {
    let c = b.coord.clone();
    spawn(move || sync(&c, req))
}

fn heartbeat(b: &Broker, group: &str, member: &str, generation: i32) -> i16 {
    let req = HeartbeatRequest::default()
        .with_group_id(gid(group))
        .with_member_id(s(member))
        .with_generation_id(generation);
    match b.coord.handle(4, RequestKind::Heartbeat(req)) {
        ResponseKind::Heartbeat(r) => r.error_code,
        other => panic!("{other:?}"),
    }
}

fn leave(b: &Broker, group: &str, members: &[(&str, Option<&str>)]) -> LeaveGroupResponse {
    let req = LeaveGroupRequest::default()
        .with_group_id(gid(group))
        .with_members(
            members
                .iter()
                .map(|(m, i)| {
                    MemberIdentity::default()
                        .with_member_id(s(m))
                        .with_group_instance_id(i.map(s))
                })
                .collect(),
        );
    match b.coord.handle(5, RequestKind::LeaveGroup(req)) {
        ResponseKind::LeaveGroup(r) => r,
        other => panic!("{other:?}"),
    }
}

fn commit_req(
    group: &str,
    member: &str,
    generation: i32,
    offsets: &[(&str, i32, i64)],
) -> OffsetCommitRequest {
    let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
    for (t, p, o) in offsets {
        let part = OffsetCommitRequestPartition::default()
            .with_partition_index(*p)
            .with_committed_offset(*o)
            .with_committed_leader_epoch(3)
            .with_committed_metadata(Some(s(&format!("m{o}"))));
        match topics.iter_mut().find(|x| x.name.as_str() == *t) {
            Some(x) => x.partitions.push(part),
            None => topics.push(
                OffsetCommitRequestTopic::default()
                    .with_name(TopicName(s(t)))
                    .with_partitions(vec![part]),
            ),
        }
    }
    OffsetCommitRequest::default()
        .with_group_id(gid(group))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(s(member))
        .with_topics(topics)
}

/// Commits (v9) and returns the error codes in request order.
fn commit_v(b: &Broker, v: i16, req: OffsetCommitRequest) -> Vec<i16> {
    match b.coord.handle(v, RequestKind::OffsetCommit(req)) {
        ResponseKind::OffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        other => panic!("{other:?}"),
    }
}

fn commit(
    b: &Broker,
    group: &str,
    member: &str,
    generation: i32,
    offsets: &[(&str, i32, i64)],
) -> Vec<i16> {
    commit_v(b, 9, commit_req(group, member, generation, offsets))
}

/// Fetches (v8) the listed partitions, or all with `None`: (topic, partition, offset, error).
fn fetch_opts(
    b: &Broker,
    group: &str,
    parts: Option<&[(&str, i32)]>,
    require_stable: bool,
) -> Vec<(String, i32, i64, i16)> {
    let topics = parts.map(|parts| {
        let mut ts: Vec<OffsetFetchRequestTopics> = Vec::new();
        for (t, p) in parts {
            match ts.iter_mut().find(|x| x.name.as_str() == *t) {
                Some(x) => x.partition_indexes.push(*p),
                None => ts.push(
                    OffsetFetchRequestTopics::default()
                        .with_name(TopicName(s(t)))
                        .with_partition_indexes(vec![*p]),
                ),
            }
        }
        ts
    });
    let req = OffsetFetchRequest::default()
        .with_require_stable(require_stable)
        .with_groups(vec![
            OffsetFetchRequestGroup::default()
                .with_group_id(gid(group))
                .with_topics(topics),
        ]);
    let r: OffsetFetchResponse = match b.coord.handle(8, RequestKind::OffsetFetch(req)) {
        ResponseKind::OffsetFetch(r) => r,
        other => panic!("{other:?}"),
    };
    assert_eq!(r.groups.len(), 1);
    assert_eq!(r.groups[0].error_code, 0);
    r.groups[0]
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    t.name.to_string(),
                    p.partition_index,
                    p.committed_offset,
                    p.error_code,
                )
            })
        })
        .collect()
}

fn fetch(b: &Broker, group: &str, parts: &[(&str, i32)]) -> Vec<i64> {
    fetch_opts(b, group, Some(parts), false)
        .into_iter()
        .map(|(_, _, o, e)| {
            assert_eq!(e, 0);
            o
        })
        .collect()
}

fn describe(b: &Broker, v: i16, groups: &[&str]) -> DescribeGroupsResponse {
    let req = DescribeGroupsRequest::default().with_groups(groups.iter().map(|g| gid(g)).collect());
    match b.coord.handle(v, RequestKind::DescribeGroups(req)) {
        ResponseKind::DescribeGroups(r) => r,
        other => panic!("{other:?}"),
    }
}

fn list(b: &Broker, states: &[&str], types: &[&str]) -> Vec<ListedGroup> {
    let req = ListGroupsRequest::default()
        .with_states_filter(states.iter().map(|x| s(x)).collect())
        .with_types_filter(types.iter().map(|x| s(x)).collect());
    match b.coord.handle(5, RequestKind::ListGroups(req)) {
        ResponseKind::ListGroups(r) => {
            assert_eq!(r.error_code, 0);
            r.groups
        }
        other => panic!("{other:?}"),
    }
}

fn delete(b: &Broker, groups: &[&str]) -> Vec<i16> {
    let req =
        DeleteGroupsRequest::default().with_groups_names(groups.iter().map(|g| gid(g)).collect());
    match b.coord.handle(2, RequestKind::DeleteGroups(req)) {
        ResponseKind::DeleteGroups(r) => r.results.iter().map(|x| x.error_code).collect(),
        other => panic!("{other:?}"),
    }
}

fn txn_commit(
    b: &Broker,
    group: &str,
    pid: i64,
    epoch: i16,
    offsets: &[(&str, i32, i64)],
) -> Vec<i16> {
    let topics = offsets
        .iter()
        .map(|(t, p, o)| {
            TxnOffsetCommitRequestTopic::default()
                .with_name(TopicName(s(t)))
                .with_partitions(vec![
                    TxnOffsetCommitRequestPartition::default()
                        .with_partition_index(*p)
                        .with_committed_offset(*o)
                        .with_committed_metadata(Some(s(""))),
                ])
        })
        .collect();
    let req = TxnOffsetCommitRequest::default()
        .with_transactional_id(TransactionalId(s("tx")))
        .with_group_id(gid(group))
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_topics(topics);
    match b.coord.handle(3, RequestKind::TxnOffsetCommit(req)) {
        ResponseKind::TxnOffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        other => panic!("{other:?}"),
    }
}

/// What the transaction coordinator does at the end of a transaction: the marker into the
/// group's partition, then `complete_txn`.
fn end_txn(b: &Broker, group: &str, pid: i64, epoch: i16, commit: bool, tell_coordinator: bool) {
    let tp = TopicPartition {
        topic: OFFSETS_TOPIC.into(),
        partition: b.coord.partition_for(group),
    };
    let h = b.logs.get(&tp).unwrap();
    let marker = BatchBuilder::end_txn_marker(
        mirrorlog_index::ProducerId(pid),
        ProducerEpoch(epoch),
        commit,
        0,
        TimestampMs(b.now()),
    )
    .build();
    let info = h
        .append_as_leader_durable(
            marker.into_bytes(),
            LeaderEpoch(0),
            LeaderOrigin::Coordinator,
        )
        .unwrap();
    h.write().update_high_watermark(info.last_offset.next());
    if tell_coordinator {
        b.coord.complete_txn(pid, epoch, commit, &[tp.partition]);
    }
}

/// Two members through a full first rebalance (initial delay 0): A leads alone in generation
/// 1, B's arrival rebalances to generation 2 with both. Returns (A, B).
fn stable_pair(b: &Broker, group: &str) -> (String, String) {
    let a = member_id(b, group);
    let ra = join(&b.coord, 9, join_req(group, &a, None));
    assert_eq!(
        (ra.error_code, ra.generation_id, ra.leader.as_str()),
        (0, 1, a.as_str())
    );
    let sa = sync(&b.coord, sync_req(group, &a, 1, &[(&a, "a-1")]));
    assert_eq!((sa.error_code, &sa.assignment[..]), (0, &b"a-1"[..]));
    let m = member_id(b, group);
    let rb = spawn_join(b, group, &m, None);
    b.wait_for(group, "B parked", |s| {
        s.state == "PreparingRebalance" && s.awaiting_join == 1
    });
    assert_eq!(heartbeat(b, group, &a, 1), E::RebalanceInProgress.code());
    let ra = join(&b.coord, 9, join_req(group, &a, None));
    let rb = recv(&rb);
    assert_eq!((ra.error_code, rb.error_code), (0, 0));
    assert_eq!((ra.generation_id, rb.generation_id), (2, 2));
    let sb = spawn_sync(b, sync_req(group, &m, 2, &[]));
    let sa = sync(
        &b.coord,
        sync_req(group, &a, 2, &[(&a, "a-2"), (&m, "b-2")]),
    );
    assert_eq!(&sa.assignment[..], b"a-2");
    assert_eq!(&recv(&sb).assignment[..], b"b-2");
    (a, m)
}

#[test]
fn two_members_join_one_leads_and_sync_delivers_assignments() {
    let (_dir, b) = broker(GroupConfig {
        group_initial_rebalance_delay_ms: 3000,
        ..GroupConfig::default()
    });
    let g = "g1";
    let a = member_id(&b, g);
    let m = member_id(&b, g);
    assert_eq!(b.coord.group_snapshot(g).unwrap().pending_members, 2);
    let ja = spawn_join(&b, g, &a, None);
    b.wait_for(g, "A parked", |s| s.awaiting_join == 1);
    let jb = spawn_join(&b, g, &m, None);
    b.wait_for(g, "both parked", |s| s.awaiting_join == 2);
    // The initial delay is extended once because B arrived during it.
    b.advance(3000);
    assert!(ja.try_recv().is_err() && jb.try_recv().is_err());
    assert_eq!(
        b.coord.group_snapshot(g).unwrap().state,
        "PreparingRebalance"
    );
    b.advance(3000);
    let (ra, rb) = (recv(&ja), recv(&jb));
    assert_eq!((ra.error_code, rb.error_code), (0, 0));
    assert_eq!((ra.generation_id, rb.generation_id), (1, 1));
    assert_eq!(ra.leader, rb.leader);
    assert_eq!(ra.protocol_name.as_ref().unwrap().as_str(), "range");
    assert_eq!(ra.protocol_type.as_ref().unwrap().as_str(), "consumer");
    let (leader, follower, lr, fr) = if ra.leader.as_str() == a {
        (&a, &m, &ra, &rb)
    } else {
        (&m, &a, &rb, &ra)
    };
    assert_eq!(lr.members.len(), 2, "the leader gets the members");
    assert!(fr.members.is_empty(), "followers get none");
    let meta = lr
        .members
        .iter()
        .find(|x| x.member_id.as_str() == follower.as_str())
        .unwrap();
    assert_eq!(&meta.metadata[..], format!("sub-{follower}").as_bytes());
    // The follower's SyncGroup waits for the leader's.
    let fs = spawn_sync(&b, sync_req(g, follower, 1, &[]));
    b.wait_for(g, "follower parked in sync", |s| s.awaiting_sync == 1);
    assert_eq!(
        heartbeat(&b, g, follower, 1),
        0,
        "heartbeats are fine while completing"
    );
    let ls = sync(
        &b.coord,
        sync_req(g, leader, 1, &[(leader, "L"), (follower, "F")]),
    );
    assert_eq!((ls.error_code, &ls.assignment[..]), (0, &b"L"[..]));
    let fs = recv(&fs);
    assert_eq!((fs.error_code, &fs.assignment[..]), (0, &b"F"[..]));
    assert_eq!(fs.protocol_name.unwrap().as_str(), "range");
    let snap = b.coord.group_snapshot(g).unwrap();
    assert_eq!((snap.state, snap.generation_id), ("Stable", 1));
    assert!(b.coord.is_group_active(g));
    // A late SyncGroup in Stable gets the stored assignment at once.
    assert_eq!(
        &sync(&b.coord, sync_req(g, follower, 1, &[])).assignment[..],
        b"F"
    );
}

#[test]
fn a_third_member_triggers_a_rebalance_and_members_rejoin() {
    let (_dir, b) = broker(GroupConfig::default());
    let g = "g2";
    let (a, m) = stable_pair(&b, g);
    let c = member_id(&b, g);
    let jc = spawn_join(&b, g, &c, None);
    b.wait_for(g, "C parked", |s| {
        s.state == "PreparingRebalance" && s.awaiting_join == 1
    });
    assert_eq!(heartbeat(&b, g, &a, 2), E::RebalanceInProgress.code());
    assert_eq!(heartbeat(&b, g, &m, 2), E::RebalanceInProgress.code());
    // A commit by a member of the old generation during the rebalance is still accepted.
    assert_eq!(commit(&b, g, &a, 2, &[("orders", 0, 5)]), vec![0]);
    // A SyncGroup during PreparingRebalance is told to rejoin.
    assert_eq!(
        sync(&b.coord, sync_req(g, &m, 2, &[])).error_code,
        E::RebalanceInProgress.code()
    );
    let ja = spawn_join(&b, g, &a, None);
    b.wait_for(g, "A parked", |s| s.awaiting_join == 2);
    assert!(jc.try_recv().is_err(), "the join phase waits for B");
    let rb = join(&b.coord, 9, join_req(g, &m, None));
    let (ra, rc) = (recv(&ja), recv(&jc));
    for r in [&ra, &rb, &rc] {
        assert_eq!((r.error_code, r.generation_id), (0, 3));
        assert_eq!(
            r.leader.as_str(),
            a,
            "the leader rejoined and keeps leading"
        );
    }
    assert_eq!(ra.members.len(), 3);
    assert!(rb.members.is_empty() && rc.members.is_empty());
    assert_eq!(heartbeat(&b, g, &c, 2), E::IllegalGeneration.code());
    assert_eq!(heartbeat(&b, g, &c, 3), 0);
    // A commit while the assignment is being computed gets REBALANCE_IN_PROGRESS.
    assert_eq!(
        commit(&b, g, &c, 3, &[("orders", 1, 1)]),
        vec![E::RebalanceInProgress.code()]
    );
    let sc = spawn_sync(&b, sync_req(g, &c, 3, &[]));
    let sb = spawn_sync(&b, sync_req(g, &m, 3, &[]));
    b.wait_for(g, "two syncs parked", |s| s.awaiting_sync == 2);
    let sa = sync(&b.coord, sync_req(g, &a, 3, &[(&a, "A"), (&c, "C")]));
    assert_eq!(&sa.assignment[..], b"A");
    assert_eq!(&recv(&sc).assignment[..], b"C");
    let sb = recv(&sb);
    assert_eq!(
        (sb.error_code, sb.assignment.len()),
        (0, 0),
        "no assignment: empty"
    );
    assert_eq!(commit(&b, g, &c, 3, &[("orders", 1, 7)]), vec![0]);
}

#[test]
fn a_leaving_member_triggers_a_rebalance() {
    let (_dir, b) = broker(GroupConfig::default());
    let g = "g3";
    let (a, m) = stable_pair(&b, g);
    let r = leave(&b, g, &[(&m, None), ("nobody", None)]);
    assert_eq!(r.error_code, 0);
    let codes: Vec<i16> = r.members.iter().map(|x| x.error_code).collect();
    assert_eq!(codes, vec![0, E::UnknownMemberId.code()]);
    let snap = b.coord.group_snapshot(g).unwrap();
    assert_eq!((snap.state, snap.members.len()), ("PreparingRebalance", 1));
    assert_eq!(heartbeat(&b, g, &a, 2), E::RebalanceInProgress.code());
    assert_eq!(heartbeat(&b, g, &m, 2), E::UnknownMemberId.code());
    let ra = join(&b.coord, 9, join_req(g, &a, None));
    assert_eq!(
        (ra.error_code, ra.generation_id, ra.members.len()),
        (0, 3, 1)
    );
    // The last member leaving empties the group: generation 4, Empty, stored.
    assert!(sync(&b.coord, sync_req(g, &a, 3, &[(&a, "x")])).error_code == 0);
    // LeaveGroup v0–v2 names one member and answers with a top-level error.
    let v1 = LeaveGroupRequest::default()
        .with_group_id(gid(g))
        .with_member_id(s(&a));
    match b.coord.handle(1, RequestKind::LeaveGroup(v1)) {
        ResponseKind::LeaveGroup(r) => assert_eq!(r.error_code, 0),
        other => panic!("{other:?}"),
    }
    let snap = b.coord.group_snapshot(g).unwrap();
    assert_eq!((snap.state, snap.generation_id), ("Empty", 4));
    assert!(!b.coord.is_group_active(g));
    // No such group: each member's error (Kafka's `leaveGroup`), none for the request.
    let r = leave(&b, "no-such-group", &[(&a, None)]);
    assert_eq!(
        (r.error_code, r.members[0].error_code),
        (0, E::UnknownMemberId.code())
    );
}

#[test]
fn session_timeout_expires_a_member_through_tick() {
    let (_dir, b) = broker(GroupConfig::default());
    let g = "g4";
    let (a, m) = stable_pair(&b, g);
    // A keeps heartbeating; B goes silent.
    b.advance(i64::from(SESSION_MS) / 2);
    assert_eq!(heartbeat(&b, g, &a, 2), 0);
    b.advance(i64::from(SESSION_MS) / 2);
    assert_eq!(
        b.coord.group_snapshot(g).unwrap().state,
        "PreparingRebalance",
        "B expired"
    );
    assert_eq!(b.coord.group_snapshot(g).unwrap().members, vec![a.clone()]);
    assert_eq!(heartbeat(&b, g, &m, 2), E::UnknownMemberId.code());
    assert_eq!(heartbeat(&b, g, &a, 2), E::RebalanceInProgress.code());
    let ra = join(&b.coord, 9, join_req(g, &a, None));
    assert_eq!(
        (ra.error_code, ra.generation_id, ra.members.len()),
        (0, 3, 1)
    );
    assert_eq!(
        sync(&b.coord, sync_req(g, &a, 3, &[(&a, "all")])).error_code,
        0
    );
    // The last member expiring leaves the group Empty, its offsets kept.
    assert_eq!(commit(&b, g, &a, 3, &[("orders", 2, 42)]), vec![0]);
    b.advance(i64::from(SESSION_MS));
    let snap = b.coord.group_snapshot(g).unwrap();
    assert_eq!(
        (snap.state, snap.generation_id, snap.members.len()),
        ("Empty", 4, 0)
    );
    assert_eq!(fetch(&b, g, &[("orders", 2)]), vec![42]);
}

#[test]
fn the_rebalance_timeout_ends_the_join_phase_without_laggards() {
    let (_dir, b) = broker(GroupConfig::default());
    let g = "g5";
    let (a, m) = stable_pair(&b, g);
    // A rejoins (as a leader does when metadata changes): B must rejoin too.
    let ja = spawn_join(&b, g, &a, None);
    b.wait_for(g, "A parked", |s| {
        s.state == "PreparingRebalance" && s.awaiting_join == 1
    });
    // B keeps heartbeating but never rejoins; A's parked join keeps A's session alive.
    for _ in 0..5 {
        b.advance(i64::from(REBALANCE_MS) / 6);
        assert_eq!(heartbeat(&b, g, &m, 2), E::RebalanceInProgress.code());
    }
    assert!(ja.try_recv().is_err());
    b.advance(i64::from(REBALANCE_MS) / 6);
    let ra = recv(&ja);
    assert_eq!(
        (ra.error_code, ra.generation_id, ra.members.len()),
        (0, 3, 1)
    );
    assert_eq!(heartbeat(&b, g, &m, 2), E::UnknownMemberId.code());
}

#[test]
fn a_member_that_never_syncs_is_dropped_after_the_rebalance_timeout() {
    let (_dir, b) = broker(GroupConfig::default());
    let g = "g6";
    let (a, m) = stable_pair(&b, g);
    let ja = spawn_join(&b, g, &a, None);
    b.wait_for(g, "A parked", |s| s.awaiting_join == 1);
    let rb = join(&b.coord, 9, join_req(g, &m, None));
    let ra = recv(&ja);
    assert_eq!((ra.generation_id, rb.generation_id), (3, 3));
    // B syncs and parks; the leader A never sends its SyncGroup.
    let sb = spawn_sync(&b, sync_req(g, &m, 3, &[]));
    b.wait_for(g, "B parked in sync", |s| s.awaiting_sync == 1);
    // A heartbeats (so its session holds) but never syncs: the pending-sync timer drops it.
    for _ in 0..5 {
        b.advance(i64::from(REBALANCE_MS) / 6);
        assert_eq!(heartbeat(&b, g, &a, 3), 0);
    }
    assert!(sb.try_recv().is_err());
    b.advance(i64::from(REBALANCE_MS) / 6);
    let sb = recv(&sb);
    assert_eq!(
        sb.error_code,
        E::RebalanceInProgress.code(),
        "B must rejoin"
    );
    let snap = b.coord.group_snapshot(g).unwrap();
    assert_eq!(snap.members, vec![m.clone()], "A was dropped");
    let rb = join(&b.coord, 9, join_req(g, &m, None));
    assert_eq!(
        (rb.error_code, rb.generation_id, rb.leader.as_str()),
        (0, 4, m.as_str())
    );
}

#[test]
fn join_errors_follow_kafka() {
    let (_dir, b) = broker(GroupConfig::default());
    let g = "g7";
    let bad_session = join_req(g, "", None).with_session_timeout_ms(1000);
    assert_eq!(
        join(&b.coord, 9, bad_session).error_code,
        E::InvalidSessionTimeout.code()
    );
    assert_eq!(
        join(&b.coord, 9, join_req("", "", None)).error_code,
        E::InvalidGroupId.code()
    );
    // A known member id for a group that does not exist.
    assert_eq!(
        join(&b.coord, 9, join_req(g, "ghost", None)).error_code,
        E::UnknownMemberId.code()
    );
    // Empty protocol type or no protocol on an empty group.
    let no_type = join_req(g, "", None).with_protocol_type(s(""));
    assert_eq!(
        join(&b.coord, 9, no_type).error_code,
        E::InconsistentGroupProtocol.code()
    );
    let (a, _m) = stable_pair(&b, g);
    // No protocol in common with the members.
    let other = join_req(g, "", None).with_protocols(protocols(&[("sticky", "x")]));
    let r = join(&b.coord, 3, other);
    assert_eq!(r.error_code, E::InconsistentGroupProtocol.code());
    // Before v4 a new member is added at once (no MEMBER_ID_REQUIRED); v3 answers a non-null
    // protocol name even on errors.
    assert_eq!(r.protocol_name.unwrap().as_str(), "");
    let other_type = join_req(g, &a, None).with_protocol_type(s("connect"));
    assert_eq!(
        join(&b.coord, 9, other_type).error_code,
        E::InconsistentGroupProtocol.code()
    );
    assert_eq!(heartbeat(&b, g, "ghost", 2), E::UnknownMemberId.code());
    assert_eq!(heartbeat(&b, g, &a, 1), E::IllegalGeneration.code());
    assert_eq!(heartbeat(&b, "no-group", &a, 1), E::UnknownMemberId.code());
    assert_eq!(
        sync(&b.coord, sync_req(g, &a, 7, &[])).error_code,
        E::IllegalGeneration.code()
    );
    let wrong_protocol = sync_req(g, &a, 2, &[]).with_protocol_name(Some(s("roundrobin")));
    assert_eq!(
        sync(&b.coord, wrong_protocol).error_code,
        E::InconsistentGroupProtocol.code()
    );
    // A JoinGroup v3 of a new member joins at once (no MEMBER_ID_REQUIRED) and rebalances.
    let jc = spawn({
        let c = b.coord.clone();
        let req = join_req(g, "", None);
        move || join(&c, 3, req)
    });
    b.wait_for(g, "v3 member parked", |s| {
        s.awaiting_join == 1 && s.members.len() == 3
    });
    let jm = spawn_join(&b, g, &_m, None);
    b.wait_for(g, "B parked", |s| s.awaiting_join == 2);
    let ra = join(&b.coord, 9, join_req(g, &a, None));
    let (rc, rm) = (recv(&jc), recv(&jm));
    assert_eq!((ra.error_code, rc.error_code, rm.error_code), (0, 0, 0));
    assert_eq!((ra.generation_id, rc.generation_id), (3, 3));
    assert_eq!(rc.protocol_name.unwrap().as_str(), "range");
}

#[test]
fn group_max_size_is_enforced() {
    let (_dir, b) = broker(GroupConfig {
        group_max_size: 2,
        ..GroupConfig::default()
    });
    let g = "g8";
    let a = member_id(&b, g);
    assert_eq!(join(&b.coord, 9, join_req(g, &a, None)).error_code, 0);
    let m = member_id(&b, g);
    let c = member_id(&b, g);
    // Members waiting for their id are bounded too.
    let r = join(&b.coord, 9, join_req(g, "", None));
    assert_eq!(r.error_code, E::GroupMaxSizeReached.code());
    let jm = spawn_join(&b, g, &m, None);
    b.wait_for(g, "B parked", |s| s.awaiting_join == 1);
    let jc = spawn_join(&b, g, &c, None);
    b.wait_for(g, "C parked", |s| s.awaiting_join == 2);
    // As Kafka: during a rebalance the parked members count; the last to rejoin is refused and
    // dropped, and the join phase completes without it.
    let r = join(&b.coord, 9, join_req(g, &a, None));
    assert_eq!(r.error_code, E::GroupMaxSizeReached.code());
    let (rm, rc) = (recv(&jm), recv(&jc));
    assert_eq!((rm.error_code, rc.error_code, rm.generation_id), (0, 0, 2));
    let snap = b.coord.group_snapshot(g).unwrap();
    assert_eq!(snap.members.len(), 2);
    assert!(!snap.members.contains(&a));
    // A full stable group refuses a new member at once.
    let r = join(&b.coord, 9, join_req(g, "", None));
    assert_eq!(r.error_code, E::GroupMaxSizeReached.code());
}

#[test]
fn a_pending_member_that_never_rejoins_expires() {
    let (_dir, b) = broker(GroupConfig::default());
    let g = "g9";
    let (a, _m) = stable_pair(&b, g);
    let ghost = member_id(&b, g);
    assert_eq!(b.coord.group_snapshot(g).unwrap().pending_members, 1);
    b.advance(i64::from(SESSION_MS) - 1);
    assert_eq!(heartbeat(&b, g, &a, 2), 0);
    b.advance(1);
    assert_eq!(b.coord.group_snapshot(g).unwrap().pending_members, 0);
    assert_eq!(
        join(&b.coord, 9, join_req(g, &ghost, None)).error_code,
        E::UnknownMemberId.code()
    );
}

#[test]
fn static_members_rejoin_without_a_rebalance_and_fence_the_old_id() {
    let (_dir, b) = broker(GroupConfig::default());
    let g = "g10";
    // Static members join at once (no MEMBER_ID_REQUIRED).
    let r1 = join(&b.coord, 9, join_req(g, "", Some("i-1")));
    assert_eq!((r1.error_code, r1.generation_id), (0, 1));
    let id1 = r1.member_id.to_string();
    assert!(id1.starts_with("i-1-"), "{id1}");
    assert_eq!(
        sync(&b.coord, sync_req(g, &id1, 1, &[(&id1, "P0")])).error_code,
        0
    );
    // The instance restarts: same instance id, no member id.
    let r2 = join(&b.coord, 9, join_req(g, "", Some("i-1")));
    assert_eq!(
        (r2.error_code, r2.generation_id),
        (0, 1),
        "no new generation"
    );
    assert!(r2.skip_assignment, "v9: the leader keeps the assignment");
    assert_eq!(r2.members.len(), 1);
    let id2 = r2.member_id.to_string();
    assert_ne!(id1, id2);
    assert_eq!(b.coord.group_snapshot(g).unwrap().state, "Stable");
    let s2 = sync(
        &b.coord,
        sync_req(g, &id2, 1, &[]).with_group_instance_id(Some(s("i-1"))),
    );
    assert_eq!(
        &s2.assignment[..],
        b"P0",
        "the assignment survived the restart"
    );
    let hb = HeartbeatRequest::default()
        .with_group_id(gid(g))
        .with_member_id(s(&id1))
        .with_group_instance_id(Some(s("i-1")))
        .with_generation_id(1);
    match b.coord.handle(4, RequestKind::Heartbeat(hb)) {
        ResponseKind::Heartbeat(r) => assert_eq!(r.error_code, E::FencedInstanceId.code()),
        other => panic!("{other:?}"),
    }
    // An admin removes the static member by instance id.
    let r = leave(&b, g, &[("", Some("i-1"))]);
    assert_eq!(r.members[0].error_code, 0);
    assert_eq!(b.coord.group_snapshot(g).unwrap().state, "Empty");
}

#[test]
fn offset_commit_rules_follow_kafka() {
    let (_dir, b) = broker(GroupConfig::default());
    // A simple group: generation −1, no member, created by its first commit.
    assert_eq!(
        commit(
            &b,
            "simple",
            "",
            -1,
            &[("orders", 0, 10), ("orders", 1, 11)]
        ),
        vec![0, 0]
    );
    assert_eq!(
        fetch(&b, "simple", &[("orders", 0), ("orders", 1), ("orders", 2)]),
        vec![10, 11, -1]
    );
    // Unknown partitions and oversized metadata fail alone.
    let mut req = commit_req(
        "simple",
        "",
        -1,
        &[("orders", 9, 1), ("nope", 0, 1), ("payments", 0, 4)],
    );
    req.topics[2].partitions[0].committed_metadata = Some(s(&"x".repeat(5000)));
    assert_eq!(
        commit_v(&b, 9, req),
        vec![
            E::UnknownTopicOrPartition.code(),
            E::UnknownTopicOrPartition.code(),
            E::OffsetMetadataTooLarge.code()
        ]
    );
    // A generation for a group that does not exist.
    assert_eq!(
        commit(&b, "nogroup", "m", 1, &[("orders", 0, 1)]),
        vec![E::GroupIdNotFound.code()]
    );
    assert_eq!(
        commit_v(&b, 8, commit_req("nogroup", "m", 1, &[("orders", 0, 1)])),
        vec![E::IllegalGeneration.code()]
    );
    assert!(b.coord.group_snapshot("nogroup").is_none());
    // Commits to an active group need a member and the generation.
    let g = "active";
    let (a, _m) = stable_pair(&b, g);
    assert_eq!(
        commit(&b, g, "", -1, &[("orders", 0, 1)]),
        vec![E::UnknownMemberId.code()]
    );
    assert_eq!(
        commit(&b, g, "ghost", 2, &[("orders", 0, 1)]),
        vec![E::UnknownMemberId.code()]
    );
    assert_eq!(
        commit(&b, g, &a, 1, &[("orders", 0, 1)]),
        vec![E::IllegalGeneration.code()]
    );
    assert_eq!(commit(&b, g, &a, 2, &[("orders", 0, 1)]), vec![0]);
    assert_eq!(
        commit(&b, "", "", -1, &[("orders", 0, 1)]),
        vec![E::InvalidGroupId.code()]
    );
    // Fetch of everything, and the metadata and leader epoch kept.
    let all = fetch_opts(&b, "simple", None, false);
    assert_eq!(
        all,
        vec![("orders".into(), 0, 10, 0), ("orders".into(), 1, 11, 0)]
    );
    // OffsetFetch v1 (single group, per-partition errors only).
    let req = OffsetFetchRequest::default()
        .with_group_id(gid("simple"))
        .with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(TopicName(s("orders")))
                .with_partition_indexes(vec![0]),
        ]));
    match b.coord.handle(5, RequestKind::OffsetFetch(req)) {
        ResponseKind::OffsetFetch(r) => {
            let p = &r.topics[0].partitions[0];
            assert_eq!((p.committed_offset, p.committed_leader_epoch), (10, 3));
            assert_eq!(p.metadata.as_ref().unwrap().as_str(), "m10");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn committed_offsets_and_groups_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let config = GroupConfig::default();
    let b = open(dir.path(), &clock, config.clone());
    let g = "restart";
    let (a, m) = stable_pair(&b, g);
    assert_eq!(
        commit(&b, g, &a, 2, &[("orders", 0, 100), ("orders", 3, 300)]),
        vec![0, 0]
    );
    assert_eq!(
        commit(&b, g, &m, 2, &[("orders", 0, 150), ("payments", 0, 7)]),
        vec![0, 0]
    );
    assert_eq!(commit(&b, "simple", "", -1, &[("payments", 0, 1)]), vec![0]);
    assert_eq!(commit(&b, "simple", "", -1, &[("payments", 0, 2)]), vec![0]);
    let b = b.reopen(dir.path(), config.clone());
    assert_eq!(
        fetch(&b, g, &[("orders", 0), ("orders", 3), ("payments", 0)]),
        vec![150, 300, 7]
    );
    assert_eq!(fetch(&b, "simple", &[("payments", 0)]), vec![2]);
    let snap = b.coord.group_snapshot(g).unwrap();
    assert_eq!((snap.state, snap.generation_id), ("Stable", 2));
    assert_eq!(snap.protocol_name.as_deref(), Some("range"));
    assert_eq!(snap.leader_id.as_deref(), Some(a.as_str()));
    // The members came back: they keep heartbeating and committing without a rebalance.
    assert_eq!(heartbeat(&b, g, &a, 2), 0);
    assert_eq!(
        &sync(&b.coord, sync_req(g, &m, 2, &[])).assignment[..],
        b"b-2"
    );
    assert_eq!(commit(&b, g, &m, 2, &[("orders", 0, 160)]), vec![0]);
    // After a crash (no clean shutdown) as well.
    let Broker { clock, logs, coord } = b;
    drop(coord);
    drop(logs);
    let logs = open_logs(dir.path(), &clock);
    let coord = GroupCoordinator::open(logs.clone(), config, clock.clone()).unwrap();
    let b = Broker { clock, logs, coord };
    assert_eq!(fetch(&b, g, &[("orders", 0)]), vec![160]);
    // Members that do not heartbeat after a restart expire as usual.
    b.advance(i64::from(SESSION_MS));
    assert_eq!(b.coord.group_snapshot(g).unwrap().state, "Empty");
}

#[test]
fn transactional_offsets_count_only_once_committed() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let config = GroupConfig::default();
    let b = open(dir.path(), &clock, config.clone());
    let g = "txg";
    assert_eq!(commit(&b, g, "", -1, &[("orders", 0, 5)]), vec![0]);
    // Staged: invisible, and unstable for a require_stable fetch.
    assert_eq!(
        txn_commit(&b, g, 1000, 0, &[("orders", 0, 50), ("orders", 1, 51)]),
        vec![0, 0]
    );
    assert_eq!(fetch(&b, g, &[("orders", 0), ("orders", 1)]), vec![5, -1]);
    let stable = fetch_opts(&b, g, Some(&[("orders", 0)]), true);
    assert_eq!(stable[0].3, E::UnstableOffsetCommit.code());
    assert_eq!(b.coord.group_snapshot(g).unwrap().staged_offsets, 2);
    end_txn(&b, g, 1000, 0, true, true);
    assert_eq!(fetch(&b, g, &[("orders", 0), ("orders", 1)]), vec![50, 51]);
    // Aborted: dropped.
    assert_eq!(txn_commit(&b, g, 2000, 0, &[("orders", 0, 99)]), vec![0]);
    end_txn(&b, g, 2000, 0, false, true);
    assert_eq!(fetch(&b, g, &[("orders", 0)]), vec![50]);
    // A plain commit after a staged one wins over it when the transaction commits later.
    assert_eq!(txn_commit(&b, g, 3000, 0, &[("orders", 2, 20)]), vec![0]);
    assert_eq!(commit(&b, g, "", -1, &[("orders", 2, 30)]), vec![0]);
    end_txn(&b, g, 3000, 0, true, true);
    assert_eq!(fetch(&b, g, &[("orders", 2)]), vec![30]);
    // A fenced producer epoch.
    assert_eq!(txn_commit(&b, g, 1000, 1, &[("orders", 3, 1)]), vec![0]);
    assert_eq!(
        txn_commit(&b, g, 1000, 0, &[("orders", 3, 2)]),
        vec![E::InvalidProducerEpoch.code()]
    );
    end_txn(&b, g, 1000, 1, false, true);
    // One transaction committed in the log but not yet told to the coordinator, one still
    // open: a restart finds the first committed and the second staged.
    assert_eq!(txn_commit(&b, g, 4000, 0, &[("payments", 0, 400)]), vec![0]);
    end_txn(&b, g, 4000, 0, true, false);
    assert_eq!(txn_commit(&b, g, 5000, 0, &[("orders", 3, 500)]), vec![0]);
    let b = b.reopen(dir.path(), config);
    assert_eq!(
        fetch(
            &b,
            g,
            &[("orders", 0), ("orders", 1), ("orders", 2), ("payments", 0)]
        ),
        vec![50, 51, 30, 400]
    );
    assert_eq!(fetch(&b, g, &[("orders", 3)]), vec![-1]);
    assert_eq!(b.coord.group_snapshot(g).unwrap().staged_offsets, 1);
    end_txn(&b, g, 5000, 0, true, true);
    assert_eq!(fetch(&b, g, &[("orders", 3)]), vec![500]);
}

#[test]
fn delete_groups_removes_empty_groups_and_their_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let config = GroupConfig::default();
    let b = open(dir.path(), &clock, config.clone());
    let (a, _) = stable_pair(&b, "busy");
    assert_eq!(
        commit(&b, "idle", "", -1, &[("orders", 0, 1), ("orders", 1, 2)]),
        vec![0, 0]
    );
    assert_eq!(txn_commit(&b, "idle", 77, 0, &[("orders", 2, 3)]), vec![0]);
    assert_eq!(
        delete(&b, &["busy", "idle", "nope", ""]),
        vec![
            E::NonEmptyGroup.code(),
            0,
            E::GroupIdNotFound.code(),
            // Kafka looks the empty id up (it refuses only a null one): no such group.
            E::GroupIdNotFound.code()
        ]
    );
    assert!(b.coord.group_snapshot("idle").is_none());
    assert_eq!(
        fetch(&b, "idle", &[("orders", 0), ("orders", 1)]),
        vec![-1, -1]
    );
    // The staged offset went too: its transaction committing later changes nothing.
    end_txn(&b, "idle", 77, 0, true, true);
    assert!(b.coord.group_snapshot("idle").is_none());
    assert_eq!(delete(&b, &["idle"]), vec![E::GroupIdNotFound.code()]);
    assert!(b.coord.is_group_active("busy"));
    let _ = a;
    let b = b.reopen(dir.path(), config);
    assert!(
        b.coord.group_snapshot("idle").is_none(),
        "the tombstones replay"
    );
    assert_eq!(
        fetch(&b, "idle", &[("orders", 0), ("orders", 2)]),
        vec![-1, -1]
    );
}

#[test]
fn describe_and_list_groups_show_state_members_and_filters() {
    let (_dir, b) = broker(GroupConfig::default());
    let (a, m) = stable_pair(&b, "d1");
    assert_eq!(commit(&b, "d2", "", -1, &[("orders", 0, 1)]), vec![0]);
    let r = describe(&b, 5, &["d1", "d2", "missing"]);
    assert_eq!(r.groups.len(), 3);
    let d1 = &r.groups[0];
    assert_eq!(
        (
            d1.error_code,
            d1.group_state.as_str(),
            d1.protocol_type.as_str(),
            d1.protocol_data.as_str()
        ),
        (0, "Stable", "consumer", "range")
    );
    assert_eq!(d1.authorized_operations, i32::MIN);
    let mut members: Vec<(String, String, String, Vec<u8>)> = d1
        .members
        .iter()
        .map(|x| {
            (
                x.member_id.to_string(),
                x.client_id.to_string(),
                x.client_host.to_string(),
                x.member_assignment.to_vec(),
            )
        })
        .collect();
    members.sort();
    let mut want = vec![
        (
            a.clone(),
            "app".to_string(),
            "/127.0.0.1".to_string(),
            b"a-2".to_vec(),
        ),
        (
            m.clone(),
            "app".to_string(),
            "/127.0.0.1".to_string(),
            b"b-2".to_vec(),
        ),
    ];
    want.sort();
    assert_eq!(members, want);
    assert!(d1.members.iter().all(|x| !x.member_metadata.is_empty()));
    let d2 = &r.groups[1];
    assert_eq!(
        (
            d2.group_state.as_str(),
            d2.protocol_type.as_str(),
            d2.members.len()
        ),
        ("Empty", "", 0)
    );
    assert_eq!(
        (r.groups[2].error_code, r.groups[2].group_state.as_str()),
        (0, "Dead")
    );
    let r6 = describe(&b, 6, &["missing"]);
    assert_eq!(r6.groups[0].error_code, E::GroupIdNotFound.code());
    assert!(r6.groups[0].error_message.is_some());
    // During a rebalance members show without metadata or assignment.
    let c = member_id(&b, "d1");
    let _jc = spawn_join(&b, "d1", &c, None);
    b.wait_for("d1", "C parked", |s| s.awaiting_join == 1);
    let d = describe(&b, 5, &["d1"]);
    let d = &d.groups[0];
    assert_eq!(
        (
            d.group_state.as_str(),
            d.protocol_data.as_str(),
            d.members.len()
        ),
        ("PreparingRebalance", "", 3)
    );
    assert!(
        d.members
            .iter()
            .all(|x| x.member_assignment.is_empty() && x.member_metadata.is_empty())
    );
    let names = |gs: Vec<ListedGroup>| -> Vec<(String, String, String)> {
        gs.into_iter()
            .map(|x| {
                (
                    x.group_id.to_string(),
                    x.group_state.to_string(),
                    x.protocol_type.to_string(),
                )
            })
            .collect()
    };
    assert_eq!(
        names(list(&b, &[], &[])),
        vec![
            ("d1".into(), "PreparingRebalance".into(), "consumer".into()),
            ("d2".into(), "Empty".into(), "".into())
        ]
    );
    assert_eq!(
        names(list(&b, &["empty"], &[])),
        vec![("d2".into(), "Empty".into(), "".into())]
    );
    assert_eq!(list(&b, &["Stable"], &[]).len(), 0);
    assert_eq!(list(&b, &[], &["classic"]).len(), 2);
    assert!(list(&b, &[], &["consumer"]).is_empty());
    assert_eq!(list(&b, &[], &[])[0].group_type.as_str(), "classic");
}

#[test]
fn the_commit_clamp_applies_to_every_commit() {
    let (_dir, b) = broker(GroupConfig::default());
    // A mirror-style clamp on `payments-0`: [10, 20].
    b.coord.set_commit_clamp(Box::new(|tp, offset| {
        if tp.topic == "payments" {
            offset.clamp(10, 20)
        } else {
            offset
        }
    }));
    assert_eq!(
        commit(&b, "c", "", -1, &[("payments", 0, 500), ("orders", 0, 500)]),
        vec![0, 0]
    );
    assert_eq!(
        fetch(&b, "c", &[("payments", 0), ("orders", 0)]),
        vec![20, 500]
    );
    assert_eq!(commit(&b, "c", "", -1, &[("payments", 0, 3)]), vec![0]);
    assert_eq!(fetch(&b, "c", &[("payments", 0)]), vec![10]);
    assert_eq!(txn_commit(&b, "c", 9, 0, &[("payments", 0, 1000)]), vec![0]);
    end_txn(&b, "c", 9, 0, true, true);
    assert_eq!(fetch(&b, "c", &[("payments", 0)]), vec![20]);
    // A clamped offset takes the partition's epoch at the new offset (unknown here: −1).
    let r = fetch_opts(&b, "c", Some(&[("payments", 0)]), false);
    assert_eq!(r[0].2, 20);
}

/// Advances the clock in 5 s steps for `ms`, the members of `group` heartbeating each step.
fn keep_alive(b: &Broker, group: &str, generation: i32, ms: i64) {
    for _ in 0..ms / 5000 {
        for id in b.coord.group_snapshot(group).unwrap().members {
            assert_eq!(heartbeat(b, group, &id, generation), 0);
        }
        b.advance(5000);
    }
}

#[test]
fn offsets_expire_after_retention_and_empty_groups_go() {
    let (_dir, b) = broker(GroupConfig {
        offsets_retention_minutes: 1,
        offsets_retention_check_interval_ms: 1000,
        ..GroupConfig::default()
    });
    assert_eq!(commit(&b, "old", "", -1, &[("orders", 0, 1)]), vec![0]);
    let (a, _m) = stable_pair(&b, "live");
    assert_eq!(commit(&b, "live", &a, 2, &[("orders", 2, 3)]), vec![0]);
    keep_alive(&b, "live", 2, 30_000);
    assert_eq!(commit(&b, "old", "", -1, &[("orders", 1, 2)]), vec![0]);
    keep_alive(&b, "live", 2, 35_000);
    // A simple group's offsets expire a retention after their commit.
    assert_eq!(
        fetch(&b, "old", &[("orders", 0), ("orders", 1)]),
        vec![-1, 2]
    );
    keep_alive(&b, "live", 2, 30_000);
    assert!(
        b.coord.group_snapshot("old").is_none(),
        "no offset left: the group went"
    );
    // A group with members keeps its offsets.
    assert_eq!(fetch(&b, "live", &[("orders", 2)]), vec![3]);
    // Once it is empty, its offsets expire a retention after it became empty.
    b.advance(i64::from(SESSION_MS));
    assert_eq!(b.coord.group_snapshot("live").unwrap().state, "Empty");
    b.advance(55_000);
    assert_eq!(fetch(&b, "live", &[("orders", 2)]), vec![3]);
    b.advance(5_000);
    assert!(b.coord.group_snapshot("live").is_none());
    assert_eq!(fetch(&b, "live", &[("orders", 2)]), vec![-1]);
}

#[test]
fn compaction_bounds_the_offsets_log_and_keeps_the_state() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let config = GroupConfig {
        offsets_topic_partitions: 1,
        offsets_compaction_min_dirty_records: 1000,
        ..GroupConfig::default()
    };
    let b = open(dir.path(), &clock, config.clone());
    let (a, _m) = stable_pair(&b, "cg");
    for i in 0..1200 {
        assert_eq!(
            commit(&b, "cg", &a, 2, &[("orders", (i % 4) as i32, i)]),
            vec![0]
        );
    }
    assert_eq!(commit(&b, "other", "", -1, &[("payments", 0, 9)]), vec![0]);
    let before = b.coord.offsets_log_records()[0];
    assert!(before > 1200, "{before}");
    // Compact in the middle of a rebalance: the snapshot holds the group as last stored.
    let c = member_id(&b, "cg");
    let jc = spawn_join(&b, "cg", &c, None);
    b.wait_for("cg", "C parked", |s| s.awaiting_join == 1);
    b.coord.tick(b.now());
    let after = b.coord.offsets_log_records()[0];
    // The group record of `cg` as stored, none for `other` (made by a commit, never stored,
    // as in Kafka's log), five offsets.
    assert_eq!(after, 1 + 4 + 1, "one group record, five offsets");
    let ja = spawn_join(&b, "cg", &a, None);
    b.wait_for("cg", "A parked", |s| s.awaiting_join == 2);
    let rm = join(&b.coord, 9, join_req("cg", &_m, None));
    assert_eq!(
        (
            rm.generation_id,
            recv(&ja).generation_id,
            recv(&jc).generation_id
        ),
        (3, 3, 3)
    );
    let tp = TopicPartition {
        topic: OFFSETS_TOPIC.into(),
        partition: 0,
    };
    assert!(b.logs.get(&tp).unwrap().read().log_start_offset().get() > 1200);
    let b = b.reopen(dir.path(), config);
    assert_eq!(
        fetch(
            &b,
            "cg",
            &[("orders", 0), ("orders", 1), ("orders", 2), ("orders", 3)]
        ),
        vec![1196, 1197, 1198, 1199]
    );
    assert_eq!(fetch(&b, "other", &[("payments", 0)]), vec![9]);
    // Generation 3 never got its assignment stored: generation 2 with its two members.
    let snap = b.coord.group_snapshot("cg").unwrap();
    assert_eq!(
        (snap.state, snap.generation_id, snap.members.len()),
        ("Stable", 2, 2)
    );
    assert_eq!(b.coord.offsets_log_records()[0], 6);
}

#[test]
fn concurrent_groups_and_commits_from_many_threads() {
    let (_dir, b) = broker(GroupConfig::default());
    let b = Arc::new(b);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let b = b.clone();
            std::thread::spawn(move || {
                let g = format!("conc-{t}");
                let (a, _m) = stable_pair(&b, &g);
                for i in 0..50 {
                    assert_eq!(commit(&b, &g, &a, 2, &[("orders", t % 4, i)]), vec![0]);
                }
                assert_eq!(fetch(&b, &g, &[("orders", t % 4)]), vec![49]);
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(list(&b, &["stable"], &[]).len(), 8);
}

#[test]
fn open_creates_the_offsets_topic_and_refuses_another_partition_count() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let b = open(dir.path(), &clock, GroupConfig::default());
    for p in 0..8 {
        let h = b
            .logs
            .get(&TopicPartition {
                topic: OFFSETS_TOPIC.into(),
                partition: p,
            })
            .unwrap();
        assert_eq!(h.topic_id(), offsets_topic_id());
    }
    assert_eq!(commit(&b, "x", "", -1, &[("orders", 0, 1)]), vec![0]);
    // Kafka's partition rule: abs(Java hashCode) % partitions.
    assert_eq!(b.coord.partition_for("hello"), 99_162_322 % 8);
    let Broker { logs, coord, .. } = b;
    drop(coord);
    let err = GroupCoordinator::open(
        logs.clone(),
        GroupConfig {
            offsets_topic_partitions: 4,
            ..GroupConfig::default()
        },
        clock.clone(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("cannot change"), "{err}");
    let err = GroupCoordinator::open(
        logs,
        GroupConfig {
            offsets_topic_partitions: 16,
            ..GroupConfig::default()
        },
        clock,
    )
    .unwrap_err();
    assert!(err.to_string().contains("cannot change"), "{err}");
}

#[test]
fn supported_versions_are_advertised_honestly() {
    assert_eq!(
        GroupCoordinator::supported_versions(ApiKey::OffsetCommit),
        Some((2, 9))
    );
    assert_eq!(
        GroupCoordinator::supported_versions(ApiKey::OffsetFetch),
        Some((1, 9))
    );
    assert_eq!(GroupCoordinator::supported_versions(ApiKey::Fetch), None);
}

#[test]
fn old_request_versions_work() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let config = GroupConfig::default();
    let b = open(dir.path(), &clock, config.clone());
    // JoinGroup v0: no MEMBER_ID_REQUIRED, the session timeout is the rebalance timeout, and
    // the protocol name is never null.
    let r = join(&b.coord, 0, join_req("old", "", None));
    assert_eq!((r.error_code, r.generation_id), (0, 1));
    assert_eq!(r.protocol_name.as_ref().unwrap().as_str(), "range");
    let id = r.member_id.to_string();
    let sv0 = SyncGroupRequest::default()
        .with_group_id(gid("old"))
        .with_generation_id(1)
        .with_member_id(s(&id))
        .with_assignments(vec![
            SyncGroupRequestAssignment::default()
                .with_member_id(s(&id))
                .with_assignment(Bytes::from_static(b"x")),
        ]);
    match b.coord.handle(0, RequestKind::SyncGroup(sv0)) {
        ResponseKind::SyncGroup(r) => assert_eq!((r.error_code, &r.assignment[..]), (0, &b"x"[..])),
        other => panic!("{other:?}"),
    }
    // OffsetCommit v2 with a retention time: the offset expires then, whatever the broker's
    // retention, also after a restart (value version 1 keeps the expire timestamp).
    let req = commit_req("old-simple", "", -1, &[("orders", 0, 8)]).with_retention_time_ms(20_000);
    assert_eq!(commit_v(&b, 2, req), vec![0]);
    let b = b.reopen(dir.path(), config);
    assert_eq!(fetch(&b, "old-simple", &[("orders", 0)]), vec![8]);
    b.advance(600_000);
    assert_eq!(fetch(&b, "old-simple", &[("orders", 0)]), vec![-1]);
}

#[test]
fn shutdown_releases_parked_requests() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let b = open(dir.path(), &clock, GroupConfig::default());
    let (a, m) = stable_pair(&b, "sd");
    // A follower parked in SyncGroup (generation 3, the leader has not synced).
    let ja = spawn_join(&b, "sd", &a, None);
    b.wait_for("sd", "A parked", |s| s.awaiting_join == 1);
    assert_eq!(join(&b.coord, 9, join_req("sd", &m, None)).generation_id, 3);
    assert_eq!(recv(&ja).generation_id, 3);
    let leader_is_a = b.coord.group_snapshot("sd").unwrap().leader_id.as_deref() == Some(&a);
    let follower = if leader_is_a { &m } else { &a };
    let sf = spawn_sync(&b, sync_req("sd", follower, 3, &[]));
    b.wait_for("sd", "follower parked in sync", |s| s.awaiting_sync == 1);
    // A new member parked in JoinGroup of another group.
    let c = member_id(&b, "sd2");
    assert_eq!(join(&b.coord, 9, join_req("sd2", &c, None)).error_code, 0);
    let d = member_id(&b, "sd2");
    let jd = spawn_join(&b, "sd2", &d, None);
    b.wait_for("sd2", "D parked", |s| s.awaiting_join == 1);
    b.coord.shutdown();
    assert_eq!(recv(&sf).error_code, E::NotCoordinator.code());
    assert_eq!(recv(&jd).error_code, E::NotCoordinator.code());
    assert_eq!(
        join(&b.coord, 9, join_req("sd2", &c, None)).error_code,
        E::NotCoordinator.code()
    );
    assert_eq!(
        sync(&b.coord, sync_req("sd", follower, 3, &[])).error_code,
        E::NotCoordinator.code()
    );
    // Nothing holds the coordinator any more: the log manager shuts down cleanly.
    let Broker { logs, coord, .. } = b;
    drop(coord);
    Arc::try_unwrap(logs).unwrap().shutdown().unwrap();
}

fn pick_two_groups(b: &Broker) -> (String, String) {
    let a = "ga".to_string();
    let pa = b.coord.partition_for(&a);
    for i in 0..100 {
        let g = format!("gb{i}");
        if b.coord.partition_for(&g) != pa {
            return (a, g);
        }
    }
    unreachable!()
}

/// A TxnOffsetCommit for group B whose marker goes only to group A's partition (the producer
/// did AddOffsetsToTxn for A only): B's staged offsets stay staged, live as after a restart
/// (whose replay finds no marker in B's partition). `complete_txn` used to walk every shard, so
/// B's offset was committed live and gone after a restart (found in review).
#[test]
fn txn_offsets_in_a_partition_without_its_marker_stay_staged_live_and_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let config = GroupConfig::default();
    let b = open(dir.path(), &clock, config.clone());
    let (ga, gb) = pick_two_groups(&b);
    assert_eq!(txn_commit(&b, &gb, 77, 0, &[("orders", 0, 42)]), vec![0]);
    end_txn(&b, &ga, 77, 0, true, true);
    let live = fetch_opts(&b, &gb, Some(&[("orders", 0)]), false);
    assert_eq!(
        live[0].2, -1,
        "no marker in B's partition: not committed ({live:?})"
    );
    let b = b.reopen(dir.path(), config);
    let after = fetch_opts(&b, &gb, Some(&[("orders", 0)]), false);
    assert_eq!(after, live, "the same after a restart");
}

/// A static member that joined during a rebalance and retries its JoinGroup (unknown member id,
/// same instance) is replaced; the replacement is not new (as in Kafka), so its parked JoinGroup
/// satisfies its heartbeat and the session timeout does not expel it during a long join phase
/// (it used to keep `is_new` and be expired; found in review).
#[test]
fn a_replaced_static_member_parked_in_a_join_is_not_expired_by_its_session() {
    let (_dir, b) = broker(GroupConfig::default());
    // A alone, Stable, generation 1.
    let a = member_id(&b, "sg");
    let ra = join(&b.coord, 9, join_req("sg", &a, None));
    assert_eq!((ra.error_code, ra.generation_id), (0, 1));
    let sa = sync(&b.coord, sync_req("sg", &a, 1, &[(&a, "a-1")]));
    assert_eq!(sa.error_code, 0);
    // Static S joins: rebalance; S parked waiting for A.
    let s1 = spawn_join(&b, "sg", "", Some("inst"));
    b.wait_for("sg", "S parked", |s| {
        s.awaiting_join == 1 && s.members.len() == 2
    });
    // S's client times out and retries: replacement.
    let s2 = spawn_join(&b, "sg", "", Some("inst"));
    let r1 = recv(&s1);
    assert_eq!(r1.error_code, E::FencedInstanceId.code());
    b.wait_for("sg", "S' parked", |s| {
        s.awaiting_join == 1 && s.members.len() == 2
    });
    // A keeps heartbeating but takes its time to rejoin (within the rebalance timeout).
    for _ in 0..12 {
        assert_eq!(heartbeat(&b, "sg", &a, 1), E::RebalanceInProgress.code());
        b.advance(1_000);
    }
    let snap = b.coord.group_snapshot("sg").unwrap();
    assert_eq!(
        snap.awaiting_join,
        1,
        "the parked static member was expired by its session timeout: {snap:?}; s2 = {:?}",
        s2.try_recv().map(|r| r.error_code)
    );
}

#[test]
fn compaction_mid_rebalance_of_a_commit_made_group_stores_no_unsynced_generation() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let config = GroupConfig {
        offsets_topic_partitions: 1,
        offsets_compaction_min_dirty_records: 1000,
        ..GroupConfig::default()
    };
    let b = open(dir.path(), &clock, config.clone());
    // Made by an offset commit alone: no group record exists yet.
    assert_eq!(commit(&b, "solo", "", -1, &[("orders", 0, 7)]), vec![0]);
    // A consumer joins; its generation is not stored until SyncGroup completes it.
    let m = member_id(&b, "solo");
    let joined = join(&b.coord, 9, join_req("solo", &m, None));
    assert_eq!((joined.error_code, joined.generation_id), (0, 1));
    for i in 0..1100 {
        assert_eq!(commit(&b, "filler", "", -1, &[("payments", 0, i)]), vec![0]);
    }
    b.coord.tick(b.now());
    assert!(
        b.coord.offsets_log_records()[0] < 10,
        "compacted: {}",
        b.coord.offsets_log_records()[0]
    );
    // A crash now: Kafka's log holds no record of generation 1 (nothing was synced), so the
    // group comes back empty with its offsets — not as generation 1 with an empty assignment.
    let b = b.reopen(dir.path(), config);
    let snap = b.coord.group_snapshot("solo").unwrap();
    assert_eq!(
        (snap.state, snap.generation_id, snap.members.len()),
        ("Empty", 0, 0)
    );
    assert_eq!(fetch(&b, "solo", &[("orders", 0)]), vec![7]);
    assert_eq!(fetch(&b, "filler", &[("payments", 0)]), vec![1099]);
}

#[test]
fn a_shard_whose_groups_are_all_gone_is_compacted_too() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let config = GroupConfig {
        offsets_topic_partitions: 1,
        offsets_compaction_min_dirty_records: 1000,
        ..GroupConfig::default()
    };
    let b = open(dir.path(), &clock, config.clone());
    for i in 0..1100 {
        assert_eq!(commit(&b, "gone", "", -1, &[("payments", 0, i)]), vec![0]);
    }
    assert_eq!(delete(&b, &["gone"]), vec![0]);
    b.coord.tick(b.now());
    let tp = TopicPartition {
        topic: OFFSETS_TOPIC.into(),
        partition: 0,
    };
    let h = b.logs.get(&tp).unwrap();
    let (start, end) = {
        let log = h.read();
        (log.log_start_offset(), log.log_end_offset())
    };
    drop(h);
    assert_eq!(start, end, "nothing live: every record can go");
    assert_eq!(b.coord.offsets_log_records()[0], 0);
    let b = b.reopen(dir.path(), config);
    assert!(b.coord.group_snapshot("gone").is_none());
    assert_eq!(fetch(&b, "gone", &[("payments", 0)]), vec![-1]);
}
