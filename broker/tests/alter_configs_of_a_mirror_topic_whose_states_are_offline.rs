//! Bug: a mirror topic all of whose partition states live in a `__mirror_state` partition that
//! was in an offline data directory at start is not restored (its mirror does not know it holds
//! the topic), so no mirror owns it, and the rule that refuses changes to the configs a mirror
//! copies from the source (`INVALID_CONFIG` while a mirror owns the topic) let a client change
//! them: the topic is still read-only and mirrored, and the change would stand until the source's
//! configs changed after the repair. Now such a read-only topic's copied keys are refused with
//! KAFKA_STORAGE_ERROR — what a start, stop or recover of the topic answers — by
//! IncrementalAlterConfigs and AlterConfigs alike; the keys the mirror never copies stay the
//! destination's own.

use crate::common;

use common::configs::{alter_configs, incremental_alter};
use common::mirror::{OfflineStateTopic, mirror_topic_whose_states_are_offline};
use common::two_dir_broker::close;
use kafka_protocol::ResponseError as E;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::handlers::admin::OP_SET;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TopicPartition;
use mirrorlog_mirror::state::MirrorPartitionState as S;
use mirrorlog_segment::io::SimStorage;
use std::sync::Arc;

const MIRROR: &str = "m";

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
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
    let sim = Arc::new(SimStorage::new());
    let day = LogConfig {
        retention_ms: 86_400_000,
        ..LogConfig::default()
    };
    let mirrored = |b: &Broker| {
        let m = b.mirrors.get(MIRROR).unwrap();
        m.describe()
            .iter()
            .all(|p| p.state == S::Mirroring && retention_ms(b, &p.topic) == 86_400_000)
    };
    let OfflineStateTopic {
        src,
        dst: b,
        topic,
        bad,
        ..
    } = mirror_topic_whose_states_are_offline(root.path(), &sim, MIRROR, &day, mirrored);

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
