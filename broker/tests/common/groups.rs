//! Requests on a group coordinator over a real engine, answered by its own handler: the
//! OffsetDelete tests share the offset ones, the membership tests the JoinGroup ones.

use crossbeam_channel::Receiver;
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
use mirrorlog_broker::group::{GroupCoordinator, GroupSnapshot, OFFSETS_TOPIC};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_segment::io::default_storage;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A bound on waiting for a parked request, only reached on a hang.
pub const HANG: Duration = Duration::from_secs(30);

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A log manager on `dir` holding `topics` (name, partition count, topic id byte).
pub fn logs_with(
    dir: &Path,
    clock: Arc<ManualClock>,
    topics: &[(&str, i32, u8)],
) -> Arc<LogManager> {
    let (logs, _) = LogManager::open(LogManagerConfig::new(dir), default_storage(), clock).unwrap();
    for &(topic, n, id) in topics {
        for partition in 0..n {
            let tp = TopicPartition {
                topic: topic.into(),
                partition,
            };
            logs.create(&tp, TopicId([id; 16]), LogConfig::default())
                .unwrap();
        }
    }
    Arc::new(logs)
}

/// An admin-style commit (generation −1, no member), as `alterConsumerGroupOffsets` sends.
pub fn commit(c: &GroupCoordinator, group: &str, offsets: &[(&str, i32, i64)]) {
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
pub fn fetch(c: &GroupCoordinator, group: &str, parts: &[(&str, i32)]) -> Vec<i64> {
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
pub fn delete(
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

/// Shuts `coord` down, then the log manager it used (no longer shared).
pub fn close(logs: Arc<LogManager>, coord: Arc<GroupCoordinator>) {
    coord.shutdown();
    drop(coord);
    Arc::try_unwrap(logs).unwrap().shutdown().unwrap();
}

/// One partition of a commit: (topic, partition, offset, metadata).
pub type CommitPart<'a> = (&'a str, i32, i64, &'a str);

/// OffsetCommit v9 of `parts` (a topic entry each) by `member` (`""`: none) of `generation`
/// (−1: none), with `instance` as its static id: each partition's error code, in order.
pub fn commit_as(
    c: &GroupCoordinator,
    group: &str,
    generation: i32,
    member: &str,
    instance: Option<&str>,
    parts: &[CommitPart],
) -> Vec<i16> {
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(s(member))
        .with_group_instance_id(instance.map(s))
        .with_topics(
            parts
                .iter()
                .map(|(t, p, o, m)| {
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(s(t)))
                        .with_partitions(vec![
                            OffsetCommitRequestPartition::default()
                                .with_partition_index(*p)
                                .with_committed_offset(*o)
                                .with_committed_metadata(Some(s(m))),
                        ])
                })
                .collect(),
        );
    match c.handle(9, RequestKind::OffsetCommit(req)) {
        ResponseKind::OffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        other => panic!("{other:?}"),
    }
}

/// A consumer's JoinGroup of `group` as `member` (empty: a new member), with `instance` as
/// its group instance id, a `session_ms` session, a 120 s rebalance timeout and the one
/// protocol `range`.
pub fn consumer_join_req(
    group: &str,
    member: &str,
    instance: Option<&str>,
    session_ms: i32,
) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_session_timeout_ms(session_ms)
        .with_rebalance_timeout_ms(120_000)
        .with_member_id(s(member))
        .with_group_instance_id(instance.map(s))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![
            join_group_request::JoinGroupRequestProtocol::default()
                .with_name(s("range"))
                .with_metadata(bytes::Bytes::from_static(b"sub")),
        ])
}

/// JoinGroup v9.
pub fn join(c: &GroupCoordinator, req: JoinGroupRequest) -> JoinGroupResponse {
    match c.handle(9, RequestKind::JoinGroup(req)) {
        ResponseKind::JoinGroup(r) => r,
        other => panic!("{other:?}"),
    }
}

/// JoinGroup v9 on a thread of its own (it may be parked); the answer comes on the channel.
/// The thread lets go of the coordinator before answering, so that a test may drop it.
pub fn spawn_join(c: &Arc<GroupCoordinator>, req: JoinGroupRequest) -> Receiver<JoinGroupResponse> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let c = c.clone();
    std::thread::spawn(move || {
        let r = join(&c, req);
        drop(c);
        let _ = tx.send(r);
    });
    rx
}

/// The answer of a parked request.
pub fn recv<T>(rx: &Receiver<T>) -> T {
    rx.recv_timeout(HANG).expect("a parked request hung")
}

/// Waits until `group`'s snapshot satisfies `f` (a bounded wait that only fails on a hang).
pub fn wait_for(c: &GroupCoordinator, group: &str, what: &str, f: impl Fn(&GroupSnapshot) -> bool) {
    let start = Instant::now();
    while !c.group_snapshot(group).as_ref().is_some_and(&f) {
        assert!(
            start.elapsed() < HANG,
            "waiting for {what}: {:?}",
            c.group_snapshot(group)
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A group id (of `g0` ..= `g99`) whose `__consumer_offsets` partition lives in `dir`, with
/// that partition.
pub fn group_with_offsets_in(
    c: &GroupCoordinator,
    logs: &LogManager,
    dir: &Path,
) -> (String, TopicPartition) {
    (0..100)
        .map(|i| format!("g{i}"))
        .map(|g| {
            let tp = TopicPartition {
                topic: OFFSETS_TOPIC.into(),
                partition: c.partition_for(&g),
            };
            (g, tp)
        })
        .find(|(_, tp)| logs.get(tp).unwrap().data_dir() == dir)
        .unwrap_or_else(|| panic!("some group's offsets partition is in {}", dir.display()))
}
