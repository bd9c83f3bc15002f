//! Bug: a mirror topic all of whose partition states live in a `__mirror_state` partition that
//! was in an offline data directory at start is not restored, so its mirror does not know it
//! holds the topic, and DescribeClusterMirrors and ListClusterMirrors left it out: the topic
//! stayed read-only, and its start and the configs the mirror copies answered
//! `KAFKA_STORAGE_ERROR` on account of a mirror that did not list it. Now the mirror whose
//! states of the topic are unavailable lists it, its partitions FAILED (not retryable) with a
//! reason naming the offline directory; the topics it restored are listed as before.

mod common;

use common::mirror::{open_mirror_destination, start_topics};
use common::two_dir_broker::close;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::handlers::mirror_admin::handle;
use mirrorlog_broker::mirror_rpc::{
    DescribeClusterMirrorsRequest, ListClusterMirrorsRequest, MirrorRequest, MirrorResponse,
};
use mirrorlog_broker::mirrors::MIRROR_STATE_PARTITIONS;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TopicPartition;
use mirrorlog_mirror::state::{MirrorPartitionState as S, state_partition_for};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

const MIRROR: &str = "m";
const TOPICS: u128 = 8;

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

fn list_topics(b: &Arc<Broker>) -> Vec<String> {
    let r = handle(
        b,
        MirrorRequest::ListClusterMirrors(ListClusterMirrorsRequest {
            include_topic_names: true,
        }),
    );
    match r {
        MirrorResponse::ListClusterMirrors(r) => {
            assert_eq!(r.mirrors.len(), 1, "{r:?}");
            r.mirrors[0].topic_names.clone()
        }
        other => panic!("{other:?}"),
    }
}

/// DescribeClusterMirrors of every mirror: (topic, partition, state, error message, retry
/// attempt) of the one mirror's partitions.
fn describe(b: &Arc<Broker>) -> Vec<(String, i32, String, Option<String>, i16)> {
    let r = handle(
        b,
        MirrorRequest::DescribeClusterMirrors(DescribeClusterMirrorsRequest {
            mirror_names: None,
            ..Default::default()
        }),
    );
    let MirrorResponse::DescribeClusterMirrors(r) = r else {
        panic!("{r:?}");
    };
    assert_eq!(r.mirrors.len(), 1, "{r:?}");
    assert_eq!(r.mirrors[0].error_code, 0, "{r:?}");
    r.mirrors[0]
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                (
                    t.topic_name.clone(),
                    p.partition_index,
                    p.state_value.clone(),
                    p.error_message.clone(),
                    p.retry_attempt,
                )
            })
        })
        .collect()
}

#[test]
fn describe_lists_a_mirror_topic_whose_states_are_offline() {
    let root = tempfile::tempdir().unwrap();
    let (d1, d2) = (root.path().join("d1"), root.path().join("d2"));
    let sim = Arc::new(SimStorage::new());
    let src = RunningBroker::start_local(&root.path().join("src"), 1).unwrap();
    // Fixed (scrambled) topic ids: where each state lives is the same every run.
    let id = |i: u128| i.wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835);
    let topics: Vec<(String, [u8; 16])> = (0..TOPICS)
        .map(|i| {
            let uuid = uuid::Uuid::from_u128(id(i + 1));
            let name = format!("orders-{i}");
            src.broker
                .topics
                .create(&src.broker.logs, &name, 1, LogConfig::default(), Some(uuid))
                .unwrap();
            (name, *uuid.as_bytes())
        })
        .collect();

    let (b, _) = open_mirror_destination(&d1, &d2, &sim);
    let configs = BTreeMap::from([("bootstrap.servers".to_string(), src.addr.to_string())]);
    b.mirrors.create_durable(&b, MIRROR, configs).unwrap();
    let names: Vec<String> = topics.iter().map(|(name, _)| name.clone()).collect();
    let r = start_topics(&b, MIRROR, &names);
    assert!(r.topics.iter().all(|t| t.error_code == 0), "{r:?}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !b
        .mirrors
        .get(MIRROR)
        .unwrap()
        .describe()
        .iter()
        .all(|p| p.state == S::Mirroring)
    {
        assert!(Instant::now() < deadline, "not mirrored");
        std::thread::sleep(Duration::from_millis(20));
    }
    // A topic whose log and state partition are in different dirs: fail the state's.
    let state_tp = |id: &[u8; 16]| {
        tp(
            "__mirror_state",
            state_partition_for(MIRROR, id, 0, MIRROR_STATE_PARTITIONS),
        )
    };
    let dir_of = |t: &TopicPartition| -> PathBuf { b.logs.get(t).unwrap().data_dir().into() };
    let (topic, topic_id) = topics
        .iter()
        .find(|(name, id)| dir_of(&state_tp(id)) != dir_of(&tp(name, 0)))
        .cloned()
        .expect("a topic with its state in the other dir");
    let bad = dir_of(&state_tp(&topic_id));
    // The topics whose states stay loaded: listed as before.
    let kept: Vec<String> = topics
        .iter()
        .filter(|(name, id)| dir_of(&state_tp(id)) != bad && dir_of(&tp(name, 0)) != bad)
        .map(|(name, _)| name.clone())
        .collect();
    close(b);

    let fault = bad.join(state_tp(&topic_id).to_string());
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(fault.to_str().unwrap()));
    let (b, _) = open_mirror_destination(&d1, &d2, &sim);
    assert!(b.logs.offline_dirs().iter().any(|(p, _)| *p == bad));
    assert!(
        b.mirrors.topic_owner(&topic).is_none(),
        "the scenario needs a mirror topic no mirror restored"
    );
    assert!(b.logs.get(&tp(&topic, 0)).unwrap().read().is_read_only());

    let described = describe(&b);
    let (_, _, state, message, retry) = described
        .iter()
        .find(|(t, p, ..)| *t == topic && *p == 0)
        .unwrap_or_else(|| panic!("{topic} is not described: {described:?}"));
    assert_eq!(state, "FAILED", "{described:?}");
    let message = message.clone().unwrap_or_default();
    assert!(
        message.contains(bad.to_str().unwrap()) && message.contains("__mirror_state"),
        "{message}"
    );
    assert_eq!(*retry, -1);
    for t in &kept {
        assert!(
            described.iter().any(|(name, ..)| name == t),
            "{t} is not described: {described:?}"
        );
    }
    let listed = list_topics(&b);
    assert!(listed.contains(&topic), "{listed:?}");
    assert!(kept.iter().all(|t| listed.contains(t)), "{listed:?}");
    close(b);
    drop(src);
}
