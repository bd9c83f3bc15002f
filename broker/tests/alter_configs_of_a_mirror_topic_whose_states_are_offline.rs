//! Bug: a mirror topic all of whose partition states live in a `__mirror_state` partition that
//! was in an offline data directory at start is not restored (its mirror does not know it holds
//! the topic), so no mirror owns it, and the rule that refuses changes to the configs a mirror
//! copies from the source (`INVALID_CONFIG` while a mirror owns the topic) let a client change
//! them: the topic is still read-only and mirrored, and the change would stand until the source's
//! configs changed after the repair. Now such a read-only topic's copied keys are refused with
//! KAFKA_STORAGE_ERROR — what a start, stop or recover of the topic answers — by
//! IncrementalAlterConfigs and AlterConfigs alike; the keys the mirror never copies stay the
//! destination's own.

mod common;

use common::configs::{alter_configs, incremental_alter};
use common::mirror::{open_mirror_destination, start_topics};
use common::two_dir_broker::close;
use kafka_protocol::ResponseError as E;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::handlers::admin::OP_SET;
use mirrorlog_broker::mirrors::MIRROR_STATE_PARTITIONS;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TopicPartition;
use mirrorlog_mirror::state::{MirrorPartitionState as S, state_partition_for};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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

fn open_dst(d1: &Path, d2: &Path, sim: &Arc<SimStorage>) -> Arc<Broker> {
    open_mirror_destination(d1, d2, sim).0
}

/// IncrementalAlterConfigs SET of `key` on `topic`: (error code, message).
fn incremental(b: &Broker, topic: &str, key: &str, value: &str) -> (i16, String) {
    let (code, message) = incremental_alter(b, topic, key, OP_SET, Some(value));
    (code, message.unwrap_or_default())
}

/// AlterConfigs (v2) of `topic` with `configs` as its whole set: the error code.
fn legacy(b: &Broker, topic: &str, configs: &[(&str, &str)]) -> i16 {
    alter_configs(b, topic, configs, false, 2).0
}

fn retention_ms(b: &Broker, topic: &str) -> i64 {
    b.logs
        .get(&tp(topic, 0))
        .unwrap()
        .read()
        .config()
        .retention_ms
}

#[test]
fn alter_configs_of_a_mirror_topic_whose_states_are_offline() {
    let root = tempfile::tempdir().unwrap();
    let (d1, d2) = (root.path().join("d1"), root.path().join("d2"));
    let sim = Arc::new(SimStorage::new());
    let src = RunningBroker::start_local(&root.path().join("src"), 1).unwrap();
    // Fixed (scrambled) topic ids: where each state lives is the same every run.
    let id = |i: u128| i.wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835);
    let day = LogConfig {
        retention_ms: 86_400_000,
        ..LogConfig::default()
    };
    let topics: Vec<(String, [u8; 16])> = (0..TOPICS)
        .map(|i| {
            let uuid = uuid::Uuid::from_u128(id(i + 1));
            let name = format!("orders-{i}");
            src.broker
                .topics
                .create(&src.broker.logs, &name, 1, day.clone(), Some(uuid))
                .unwrap();
            (name, *uuid.as_bytes())
        })
        .collect();

    let b = open_dst(&d1, &d2, &sim);
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
        .all(|p| p.state == S::Mirroring && retention_ms(&b, &p.topic) == 86_400_000)
    {
        assert!(Instant::now() < deadline, "not mirrored with its configs");
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
    close(b);

    let fault = bad.join(state_tp(&topic_id).to_string());
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(fault.to_str().unwrap()));
    let b = open_dst(&d1, &d2, &sim);
    assert!(b.logs.offline_dirs().iter().any(|(p, _)| *p == bad));
    assert!(
        b.mirrors.topic_owner(&topic).is_none(),
        "the scenario needs a mirror topic no mirror restored"
    );
    assert!(b.logs.get(&tp(&topic, 0)).unwrap().read().is_read_only());

    // A copied key: refused with the storage error, naming the dir; nothing changed.
    let (code, message) = incremental(&b, &topic, "retention.ms", "1000");
    assert_eq!(code, E::KafkaStorageError.code(), "{message}");
    assert!(
        message.contains("retention.ms") && message.contains(bad.to_str().unwrap()),
        "{message}"
    );
    assert_eq!(
        legacy(&b, &topic, &[("retention.ms", "1000")]),
        E::KafkaStorageError.code()
    );
    assert_eq!(retention_ms(&b, &topic), 86_400_000);
    // A key the mirror never copies is the destination's own, as on any mirror topic.
    let (code, message) = incremental(&b, &topic, "message.timestamp.before.max.ms", "1000");
    assert_eq!(code, 0, "{message}");
    close(b);
    drop(src);
}
