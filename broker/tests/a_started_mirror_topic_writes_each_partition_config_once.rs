//! A mirror start creates its destination topic and copies the source's topic configs to it
//! before the first fetch. It created each partition with the destination's defaults and then
//! wrote the source's configs over them (`ensure_mirror_topic`, then `copy_topic_configs`): a
//! second `topic.config` write, two syncs more, on every partition of every started topic that
//! has configs of its own on the source. Now the start reads the source's configs first and
//! creates the partitions with them, so a topic with source configs costs its start exactly the
//! syncs of a topic without; and each partition holds what the two steps left, a refused value
//! (logged, tried again at the next sync) included.
//!
//! Counted on simulated storage, which counts completed syncs.

use crate::common::compacted_source::{CompactedSource, NOW_MS, source_logs};
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::mirrors::{BrokerTopics, MIRROR_STATE_PARTITIONS};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::{CleanupPolicy, LogConfig};
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{DestinationTopics, MirrorConfig, MirrorManager};
use mirrorlog_mirror::state::MirrorStateStore;
use mirrorlog_segment::io::SimStorage;
use std::sync::Arc;

const TOPIC: &str = "orders";
const PARTITIONS: i32 = 3;
/// The source's own configs: a supported one, a compacted policy (which the destination maps
/// to the empty list), a value out of the destination's range (refused), a key the destination
/// does not have (skipped).
const SOURCE_CONFIGS: &[(&str, &str)] = &[
    ("retention.ms", "2592000000"),
    ("cleanup.policy", "compact"),
    ("max.message.bytes", "-5"),
    ("min.cleanable.dirty.ratio", "0.1"),
];

/// A destination broker on simulated storage with the `__mirror_state` store open.
struct Destination {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    sim: Arc<SimStorage>,
    broker: Arc<Broker>,
    store: Arc<MirrorStateStore>,
    source: Arc<EngineSource>,
}

fn destination() -> Destination {
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = source_logs(dirs.0.path());
    for p in 0..PARTITIONS {
        let tp = TopicPartition {
            topic: TOPIC.into(),
            partition: p,
        };
        src.create(&tp, TopicId([7; 16]), LogConfig::default())
            .unwrap();
    }
    let sim = Arc::new(SimStorage::new());
    let mut config = BrokerConfig::new(dirs.1.path(), "127.0.0.1", 9092);
    config.cluster_id = Some("dst".into());
    let broker = Arc::new(Broker::open(config, sim.clone(), ManualClock::new(NOW_MS)).unwrap());
    let store =
        Arc::new(MirrorStateStore::open(broker.logs.clone(), MIRROR_STATE_PARTITIONS).unwrap());
    Destination {
        _dirs: dirs,
        sim,
        broker,
        store,
        source: EngineSource::new(src, "source-cluster", 1),
    }
}

fn pairs(configs: &[(&str, &str)]) -> Vec<(String, String)> {
    (configs.iter())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Starts [`TOPIC`] on `d` from a source describing it with `configs`: the syncs the start
/// completed.
fn start(d: &Destination, configs: &[(&str, &str)]) -> u64 {
    let source = CompactedSource {
        inner: d.source.clone(),
        configs: pairs(configs),
    };
    let mirror = MirrorManager::new(
        MirrorConfig::new("m"),
        Arc::new(source),
        d.broker.logs.clone(),
        Arc::new(BrokerTopics::new(&d.broker)),
        d.store.clone(),
        ManualClock::new(NOW_MS),
    )
    .unwrap();
    let before = d.sim.syncs_completed();
    mirror.start_topics(&[TOPIC.to_string()]).unwrap();
    d.sim.syncs_completed() - before
}

fn partition_configs(b: &Broker) -> Vec<LogConfig> {
    (0..PARTITIONS)
        .map(|p| b.partition(TOPIC, p).unwrap().read().config().clone())
        .collect()
}

#[test]
fn a_topic_with_source_configs_costs_its_start_the_syncs_of_one_without() {
    let plain = destination();
    let plain_syncs = start(&plain, &[]);
    let tuned = destination();
    let tuned_syncs = start(&tuned, SOURCE_CONFIGS);
    assert_eq!(
        tuned_syncs, plain_syncs,
        "starting a topic with source configs synced {tuned_syncs} times, one without \
         {plain_syncs}"
    );

    // What the two steps stored: the plain start's topic (created with the defaults) with the
    // source's configs applied over it.
    let refused = BrokerTopics::new(&plain.broker)
        .apply_topic_configs(TOPIC, &pairs(SOURCE_CONFIGS), &[])
        .unwrap_err();
    assert!(refused.contains("max.message.bytes=-5"), "{refused}");
    let two_steps = partition_configs(&plain.broker);
    let created = partition_configs(&tuned.broker);
    assert_eq!(created, two_steps);
    for c in &created {
        assert!(c.read_only);
        assert_eq!(c.retention_ms, 2_592_000_000);
        assert_eq!(c.cleanup_policy, CleanupPolicy::Retain);
        assert_eq!(c.max_message_bytes, LogConfig::default().max_message_bytes);
        for k in ["retention.ms", "cleanup.policy"] {
            assert!(c.overrides.contains(k), "{k} not the topic's own");
        }
    }
}
